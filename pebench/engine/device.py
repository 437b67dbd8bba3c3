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


def resolve_precision(requested: str, device: torch.device) -> str:
    """The training precision ``requested`` means on ``device``: ``auto`` is ``bf16`` (autocast) on a CUDA device
    that supports bfloat16 natively (compute capability 8.0 and later; not emulated) and ``fp32`` elsewhere, the CPU
    included; any other value is kept.

    Not bf16 on the CPU, even one with native bfloat16: on the development machine of 2026-11-25 (Intel Xeon with
    AVX512-BF16 and AMX, 2 cores, torch 2.13) bf16 autocast made a training step of the default model slower at
    every training length of the quick tier, 0.53-0.61x at 16 tokens, 0.83-0.87x at 32, 0.87-0.89x at 64 and 0.95x
    at 128 (RoPE and ALiBi, side by side in one process); it paid only from 256 tokens (1.27-1.38x), a length no
    task trains at. At d_model 128 the matmuls are too small for the casts autocast adds to pay for themselves.
    ``--precision bf16`` still asks for it."""
    if requested != "auto":
        return requested
    if device.type == "cuda":
        return "bf16" if torch.cuda.is_bf16_supported(including_emulation=False) else "fp32"
    return "fp32"


def cpu_model(cpuinfo: str) -> str:
    """The CPU model of ``/proc/cpuinfo``'s text: its model name with the family and model numbers, which tell CPU
    types apart where the name does not (every Intel Xeon of the development machines reads "Intel(R) Xeon(R)
    Processor"), e.g. ``AMD EPYC (family 25 model 1)``; "" when the text names none."""
    import re

    fields = {k: re.search(rf"^{k}\s*:\s*(.+)$", cpuinfo, re.MULTILINE) for k in ("model name", "cpu family", "model")}
    name, family, model = (m.group(1).strip() if m else "" for m in fields.values())
    return f"{name} (family {family} model {model})" if name and family and model else name


def cpu_description() -> str:
    """The CPU as a result's provenance records it: model (:func:`cpu_model`, else the platform's name), torch's CPU
    capability (the ISA level its kernels dispatch to, e.g. AVX2 or AVX512) and the BLAS it was built with. Float
    results reproduce bit for bit only on the same CPU model, capability and thread count
    (docs/reproducibility.md)."""
    import platform
    import re

    model = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            model = cpu_model(f.read())
    except OSError:
        pass
    model = model or platform.processor() or platform.machine()
    try:
        isa = torch.backends.cpu.get_cpu_capability()
    except (AttributeError, RuntimeError):
        isa = "unknown"
    blas = re.search(r"BLAS_INFO=(\w+)", torch.__config__.show())
    return f"{model}, {isa}, {blas.group(1) if blas else 'unknown'} BLAS"
