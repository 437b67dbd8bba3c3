"""The precision an encoding computes a sensitive part in: :func:`upcast`."""

from __future__ import annotations

import torch
from torch import Tensor


def upcast(x: Tensor) -> Tensor:
    """``x`` in at least float32: bfloat16 and float16 (autocast) become float32; float32 and float64 stay as they
    are. For the runs' float32 and bf16 this is ``x.float()`` exactly; a float64 model (the behavioural probe,
    :mod:`pebench.engine.fingerprint`) keeps its precision instead of dropping to float32."""
    return x if x.dtype == torch.float64 else x.float()
