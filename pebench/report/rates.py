"""The learning rates behind a page's cells: a task's configuration line (with the learning-rate protocol, the rates
its cells chose instead of one configured rate) and, for the "Across the sweep" section of such a run, how many cells
of each encoding chose each rate (:func:`pebench.analysis.lr.chosen` marks the choice in the columns ``lr_point``, the
point's text, and ``lr_rate``, its rate from the stored axes: no point's text is parsed here)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

CELL = ["encoding", "task", "train_length", "seed"]
"""One cell of the protocol: each (encoding, task, seed) chooses its rate."""


def rate_text(rate: float) -> str:
    """A learning rate as ``1e-3``."""
    mantissa, exponent = f"{rate:e}".split("e")
    return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"


def _rate(value: Any) -> float | None:
    """An ``lr_rate`` cell as a rate: None for none (None, NaN, or a frame without the column)."""
    return None if value is None or pd.isna(value) else float(value)


def _text(point: str, rate: float | None) -> str:
    """A chosen point as shown: its rate (``1e-3``), or its text for a point that is no rate."""
    return point if rate is None else rate_text(rate)


def _sorted(counts: Mapping[tuple[str, float | None], int]) -> list[tuple[tuple[str, float | None], int]]:
    """``counts`` of (point, rate), lowest rate first (a point that is no rate last, by its text)."""
    return sorted(counts.items(), key=lambda kv: (float("inf") if kv[0][1] is None else kv[0][1], kv[0][0]))


def chosen_text(rows: Iterable[Mapping[str, Any]]) -> str:
    """``learning rate per cell: 1e-3 (30 cells), 3e-3 (14)`` from the results of one task (rows with ``lr_point``
    and ``lr_rate``, one cell per (encoding, seed)); empty when no row carries a chosen rate (a run at one rate)."""
    cells = {(r["encoding"], r["seed"]): (r.get("lr_point"), _rate(r.get("lr_rate"))) for r in rows}
    counts = Counter(pr for pr in cells.values() if isinstance(pr[0], str) and pr[0])
    if not counts:
        return ""
    parts = [f"{_text(*pr)} ({n}{(' cell' if n == 1 else ' cells') if i == 0 else ''})"
             for i, (pr, n) in enumerate(_sorted(counts))]  # fmt: skip
    return "learning rate per cell: " + ", ".join(parts)


def config_text(rec: Mapping[str, Any], rows: Iterable[Mapping[str, Any]] = ()) -> str:
    """A task's configuration line from one of its results ``rec`` (steps, batch, learning rate; model sizes; task
    options); with the learning-rate protocol the rates its cells (``rows``, every result of the task) chose."""
    cfg = rec.get("config") or {}
    model = cfg.get("model") or {}
    train = cfg.get("train") or {}
    parts, chosen = [], chosen_text(rows)
    if train.get("steps") is not None:
        rate = chosen or f"lr {train.get('lr', '?')}"
        parts.append(f"{train['steps']} steps, batch {train.get('batch_size', '?')}, {rate}")
    elif chosen:
        parts.append(chosen)
    if model:
        layers, heads = model.get("n_layers", "?"), model.get("n_heads", "?")
        parts.append(f"d_model {model.get('d_model', '?')}, {layers} layers, {heads} heads")
    task_opts = (cfg.get("task") or {}).get("options")
    if task_opts:
        parts.append("task options " + ", ".join(f"{k}={v}" for k, v in sorted(task_opts.items())))
    return " · ".join(parts)


def per_encoding(sel: pd.DataFrame, order: Sequence[str], colors: Mapping[str, str]) -> dict[str, Any]:
    """The learning-rate protocol's summary for the "Across the sweep" section: the rates (``1e-3``, ...) and per
    encoding, in ``order`` (the leaderboard's), its colour and the number of cells at each rate."""
    if sel.empty or "lr_point" not in sel:
        return {"rates": [], "rows": []}
    cells = sel.drop_duplicates(CELL)
    cells = cells[cells["lr_point"].map(lambda p: isinstance(p, str) and p != "")]
    chosen = [(str(p), _rate(r)) for p, r in zip(cells["lr_point"], cells.get("lr_rate", [None] * len(cells)),
                                                  strict=True)]  # fmt: skip
    points = [pr for pr, _ in _sorted(Counter(chosen))]
    counts: dict[str, Counter[tuple[str, float | None]]] = {}
    for enc, pr in zip(cells["encoding"], chosen, strict=True):
        counts.setdefault(enc, Counter())[pr] += 1
    rows = [{"encoding": enc, "color": colors.get(enc, "#555555"), "counts": [counts[enc].get(p, 0) for p in points]}
            for enc in order if enc in counts]  # fmt: skip
    return {"rates": [_text(*pr) for pr in points], "rows": rows}
