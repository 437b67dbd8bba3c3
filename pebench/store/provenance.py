"""Where a result came from: git commit and dirty flag, versions, device, host."""

from __future__ import annotations

import platform
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import torch

import pebench
from pebench.engine.device import cpu_description
from pebench.store.database import safe_url


def git_state(path: Path | None = None) -> tuple[str | None, bool | None]:
    """(commit, dirty) of the git checkout containing ``path`` (default: the package), or (None, None)."""
    cwd = Path(path or Path(pebench.__file__).resolve().parent)
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None, None
    return commit or None, bool(status.strip())


def device_name(device: torch.device) -> str:
    """The device as a run records it: the GPU's name; for the CPU its model, torch's CPU capability (ISA level) and
    BLAS (:func:`pebench.engine.device.cpu_description`) and the thread count, which decide whether a float result
    reproduces bit for bit (docs/reproducibility.md)."""
    if device.type == "cuda":
        return f"cuda:{torch.cuda.get_device_name(device)}"
    if device.type == "cpu":
        return f"cpu:{cpu_description()} x{torch.get_num_threads()} threads"[:128]
    return device.type


def run_info(device: torch.device, options: dict[str, Any], tier: str, command: str) -> dict[str, Any]:
    """The provenance fields of a run row."""
    commit, dirty = git_state()
    return {
        "git_commit": commit,
        "git_dirty": dirty,
        "package_version": pebench.__version__,
        "torch_version": torch.__version__,
        "python_version": platform.python_version(),
        "device": device_name(device),
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "tier": tier,
        "options": options,
        "command": safe_url(command or " ".join(sys.argv)),
    }
