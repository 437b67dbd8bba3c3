"""Pick the compute device: cuda, then mps, then cpu, unless the user names one."""

from __future__ import annotations

import os

import torch

from pebench.errors import PebenchError


def worker_device(device: torch.device, worker: str | None = None, count: int | None = None) -> torch.device:
    """The device of one pytest-xdist worker: with CUDA and no explicit index, worker ``gwI`` uses
    ``cuda:(I mod device count)``, so ``-n N`` spreads N workers over the GPUs (several may share one).
    ``worker`` defaults to ``$PYTEST_XDIST_WORKER``; outside xdist, or for an explicit ``cuda:N``, the device is
    kept."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "") if worker is None else worker
    if device.type != "cuda" or device.index is not None or not worker.startswith("gw"):
        return device
    count = torch.cuda.device_count() if count is None else count
    return torch.device("cuda", int(worker[2:] or 0) % max(count, 1))


def pick_device(requested: str | None = None) -> torch.device:
    """``requested`` ('auto'/None, 'cpu', 'cuda', 'cuda:1', 'mps') -> a usable :class:`torch.device`."""
    if requested in (None, "", "auto"):
        if torch.cuda.is_available():
            return torch.device("cuda")
        mps = getattr(torch.backends, "mps", None)
        if mps is not None and mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    try:
        dev = torch.device(requested)
    except RuntimeError:
        raise PebenchError(f"unknown device {requested!r}; valid: auto, cpu, cuda, cuda:N, mps") from None
    if dev.type not in ("cpu", "cuda", "mps"):
        raise PebenchError(f"unknown device {requested!r}; valid: auto, cpu, cuda, cuda:N, mps")
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise PebenchError(f"device {requested!r} requested but CUDA is not available; valid here: auto, cpu")
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise PebenchError(
            f"device {requested!r} requested but only {torch.cuda.device_count()} CUDA device(s) exist; "
            f"valid here: auto, cpu, cuda, cuda:0..cuda:{torch.cuda.device_count() - 1}"
        )
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise PebenchError(f"device {requested!r} requested but MPS is not available; valid here: auto, cpu")
    return dev


def cpu_has_native_bf16(cpuinfo: str | None = None) -> bool:
    """Whether this CPU computes bfloat16 natively: x86 with AVX512-BF16 or AMX-BF16, or Arm with the BF16
    extension (Linux: the flags of ``/proc/cpuinfo``, or ``cpuinfo`` when given; macOS: ``hw.optional.arm.FEAT_BF16``).
    Without it PyTorch emulates bfloat16 matmuls by converting to float32, which is slower than plain float32."""
    import platform
    import subprocess

    if cpuinfo is None and platform.system() == "Darwin":
        try:
            out = subprocess.run(["sysctl", "-n", "hw.optional.arm.FEAT_BF16"], capture_output=True, text=True,
                                 timeout=5, check=False).stdout  # fmt: skip
        except (OSError, subprocess.SubprocessError):
            return False
        return out.strip() == "1"
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
                cpuinfo = f.read()
        except OSError:
            return False
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() in ("flags", "features"):
            flags = set(value.split())
            return bool(flags & {"avx512_bf16", "amx_bf16", "bf16"})
    return False


def resolve_precision(requested: str, device: torch.device) -> str:
    """The training precision ``requested`` means on ``device``: ``auto`` is ``bf16`` (autocast) on a CUDA device
    that supports bfloat16 natively (compute capability 8.0 and later; not emulated) and on a CPU with native
    bfloat16 (:func:`cpu_has_native_bf16`), ``fp32`` elsewhere (MPS included); any other value is kept."""
    if requested != "auto":
        return requested
    if device.type == "cuda":
        return "bf16" if torch.cuda.is_bf16_supported(including_emulation=False) else "fp32"
    if device.type == "cpu":
        return "bf16" if cpu_has_native_bf16() else "fp32"
    return "fp32"
