"""Pick the compute device: cuda, then mps, then cpu, unless the user names one."""

from __future__ import annotations

import torch

from pebench.errors import PebenchError


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
