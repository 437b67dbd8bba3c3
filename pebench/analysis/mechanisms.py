"""How far a mechanism diagnostic moved (docs/diagnostics.md): one scale for all of them, so that the terminal's
``why`` lines and the report's *Why* section can say which moved most."""

from __future__ import annotations

import math


def moved(name: str, start: float, end: float) -> float:
    """How far diagnostic ``name`` moved from ``start`` to ``end``, in units of its scale: a share or a normalised
    entropy on [0, 1] by its change; the position probe's R² by its change clipped to [-1, 1], over 2; the logit
    range's ratio by |log2(end / start)| over 2 (4 times the training length's range moves as far as a share from 0 to
    1)."""
    if name == "position_probe":
        return abs(max(-1.0, min(1.0, end)) - max(-1.0, min(1.0, start))) / 2
    if name == "logit_range_ratio":
        return abs(math.log2(end / start)) / 2 if start > 0 and end > 0 else 0.0
    return abs(end - start)
