"""How far a mechanism diagnostic moved (docs/diagnostics.md): one scale for all of them, so that the terminal's
``why`` lines and the report's *Why* section can say which moved most; and which results measured them, where the
ranked ones did not (:func:`measured_rows`)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the terminal's summary imports this module, and pandas only where a frame is built
    import pandas as pd


def mean_position_r2(multiple: float) -> float:
    """The R² at ``multiple`` times the training length of the probe that predicts the training positions' mean
    everywhere, for a long training length: positions ``0..kL-1`` predicted as ``(L-1)/2`` give
    ``-3(kL-L)²/(k²L²-1)``, which tends to ``-3(k-1)²/k²`` (0 at 1x, -0.75 at 2x, -1.69 at 4x)."""
    return -3.0 * (multiple - 1.0) ** 2 / multiple**2


def probe_skill(r2: float, multiple: float) -> float:
    """The position probe's R² at ``multiple`` times the training length as its skill over the mean predictor
    (:func:`mean_position_r2`) on [0, 1]: ``(R² - B_k) / (1 - B_k)`` clipped; at 1x the R² itself, clipped. Past the
    training length every probe fitted there misses the positions it never saw (one predicting the mean scores
    -1.69 at 4x), so the R² alone would fall far for every encoding."""
    base = mean_position_r2(multiple)
    return max(0.0, min(1.0, (r2 - base) / (1.0 - base)))


def moved(name: str, start: float, end: float, multiple: float) -> float:
    """How far diagnostic ``name`` moved from ``start`` (at the training length) to ``end`` (at ``multiple`` times
    it), in units of its scale: a share or a normalised entropy on [0, 1] by its change; the position probe by the
    change of its skill over the mean predictor (:func:`probe_skill`, on [0, 1]); the logit range's ratio by
    |log2(end / start)| over 2 (4 times the training length's range moves as far as a share from 0 to 1)."""
    if name == "position_probe":
        return abs(probe_skill(end, multiple) - probe_skill(start, 1.0))
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
