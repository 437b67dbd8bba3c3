"""How far a mechanism diagnostic moved (docs/diagnostics.md): one scale for all of them, so that the terminal's
``why`` lines and the report's *Why* section can say which moved most; and which results measured them, where the
ranked ones did not (:func:`measured_rows`)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the terminal's summary imports this module, and pandas only where a frame is built
    import pandas as pd


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


def _stores(row: Mapping[str, Any], names: Iterable[str]) -> bool:
    metrics = row.get("metrics")
    return isinstance(metrics, Mapping) and any(metrics.get(n) is not None for n in names)


def measured_rows(sel: pd.DataFrame, measured: pd.DataFrame | None, names: Iterable[str]) -> list[dict[str, Any]]:
    """The rows to read diagnostics ``names`` from: ``sel``'s, except that an (encoding, task) none of whose rows in
    ``sel`` stores any of them takes all its rows from ``measured`` (a diagnostics run's retrained models of the
    cell, ``pebench run --diagnostics-run``), scores included, so that a cell's diagnostics and scores come from the
    same models."""
    names = tuple(names)
    rows = sel.to_dict("records")
    if measured is None or measured.empty:
        return rows
    stored = {(r["encoding"], r["task"]) for r in rows if _stores(r, names)}
    extra = [r for r in measured.to_dict("records") if (r["encoding"], r["task"]) not in stored]
    taken = {(r["encoding"], r["task"]) for r in extra}
    return [r for r in rows if (r["encoding"], r["task"]) not in taken] + extra
