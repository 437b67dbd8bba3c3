"""The learning rates behind a page's cells: a task's configuration line (with the learning-rate protocol, the rates
its cells chose instead of one configured rate) and, for the "Across the sweep" section of such a run, how many cells
of each encoding chose each rate (:func:`pebench.analysis.lr.chosen` marks the choice in the column ``lr_point``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from pebench.analysis.lr import rate_of

CELL = ["encoding", "task", "train_length", "seed"]
"""One cell of the protocol: each (encoding, task, seed) chooses its rate."""


def rate_text(point: str) -> str:
    """A rate point (``lr0.001``) as ``1e-3``; a point that is no rate is returned as it is."""
    value = rate_of(point)
    if value is None:
        return point
    mantissa, exponent = f"{value:e}".split("e")
    return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"


def _sorted(counts: Mapping[str, int]) -> list[tuple[str, int]]:
    def key(point: str) -> tuple[float, str]:
        rate = rate_of(point)
        return (float("inf") if rate is None else rate), point

    return sorted(counts.items(), key=lambda kv: key(kv[0]))


def chosen_text(rows: Iterable[Mapping[str, Any]]) -> str:
    """``learning rate per cell: 1e-3 (30 cells), 3e-3 (14)`` from the results of one task (rows with ``lr_point``,
    one cell per (encoding, seed)); empty when no row carries a chosen rate (a run at one rate)."""
    cells = {(r["encoding"], r["seed"]): r.get("lr_point") for r in rows}
    counts = Counter(p for p in cells.values() if isinstance(p, str) and p)
    if not counts:
        return ""
    parts = [f"{rate_text(p)} ({n}{(' cell' if n == 1 else ' cells') if i == 0 else ''})"
             for i, (p, n) in enumerate(_sorted(counts))]  # fmt: skip
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
    points = [p for p, _ in _sorted(Counter(cells["lr_point"]))]
    counts = {enc: Counter(g["lr_point"]) for enc, g in cells.groupby("encoding")}
    rows = [{"encoding": enc, "color": colors.get(enc, "#555555"), "counts": [counts[enc].get(p, 0) for p in points]}
            for enc in order if enc in counts]  # fmt: skip
    return {"rates": [rate_text(p) for p in points], "rows": rows}
