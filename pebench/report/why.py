"""The report's *Why* section (issue 89): for each encoding, how each mechanism diagnostic moves from the training
length to 2x and 4x beside how its score moves (docs/diagnostics.md), one row per encoding with a sparkline per
column, legible at 44 encodings.

Each value is the mean over the tasks whose results store the diagnostics at the training length and at 4x (per
task, the mean over seeds); the score is the normalised score (0 = chance, 1 = perfect). The column that moved most
from 1x to 4x (on the one scale of :func:`pebench.analysis.mechanisms.moved`) is marked.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

import pandas as pd
from markupsafe import Markup, escape

from pebench import metrics
from pebench.analysis.mechanisms import measured_rows, moved
from pebench.analysis.scoring import normalised
from pebench.status import ResultStatus

MULTIPLES = (1, 2, 4)
"""The lengths shown, as multiples of the training length."""
COLUMNS = (
    ("score", "score", (0.0, 1.0)),
    ("attn_entropy", "entropy", (0.0, 1.0)),
    ("local_mass", "local mass", (0.0, 1.0)),
    ("sink_mass", "sink mass", (0.0, 1.0)),
    ("position_probe", "position probe R²", (-1.0, 1.0)),
    ("logit_range_ratio", "logit range", (-2.0, 2.0)),
)
"""(stored name, header, the sparkline's vertical range: shares and the score on [0, 1], the probe's R² on [-1, 1],
the logit range's ratio as log2 on [-2, 2])."""
DIAGNOSTICS = tuple(name for name, _, _ in COLUMNS[1:])


def _value(row: Any, name: str) -> float | None:
    if row["status"] != ResultStatus.OK:
        return None
    if name == "score":
        config = row.get("config") if isinstance(row.get("config"), dict) else {}
        metric = metrics.of_result(row["metric"], row["higher_is_better"])
        return normalised(row["score"], metric, row["chance_level"], row["status"],
                          (config.get("model") or {}).get("vocab_size"))  # fmt: skip
    value = (row.get("metrics") or {}).get(name) if isinstance(row.get("metrics"), dict) else None
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return math.log2(value) if name == "logit_range_ratio" and value > 0 else float(value)


def sparkline(values: list[float | None], low: float, high: float, label: str) -> Markup:
    """A 54 x 16 inline SVG polyline of ``values`` (at 1x, 2x, 4x) on [low, high] (clipped), its numbers in the
    title."""
    points = []
    for i, v in enumerate(values):
        if v is not None:
            y = 14 - 12 * (min(high, max(low, v)) - low) / (high - low)
            points.append(f"{4 + 23 * i},{y:.1f}")
    title = escape(label)
    dots = "".join(f'<circle cx="{p.split(",")[0]}" cy="{p.split(",")[1]}" r="1.6"/>' for p in points)
    return Markup(f'<svg class="spark" width="54" height="16" viewBox="0 0 54 16" role="img"><title>{title}</title>'
                  f'<polyline points="{" ".join(points)}" fill="none" stroke="currentColor" stroke-width="1.2"/>'
                  f"{dots}</svg>")  # fmt: skip


def _means(rows: list[dict[str, Any]]) -> dict[str, dict[str, dict[int, float]]]:
    """encoding -> column -> multiple -> the mean over the tasks that have the column at 1x and 4x (per task, the
    mean over seeds), of the tasks whose results store a diagnostic at 1x and 4x: the score beside the diagnostics
    is that of the same cells."""
    per_task: dict[tuple[str, str, str], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        train, length = int(row["train_length"]), int(row["eval_length"])
        if length % train or length // train not in MULTIPLES:
            continue
        for name, _, _ in COLUMNS:
            value = _value(row, name)
            if value is not None:
                per_task[(str(row["encoding"]), name, str(row["task"]))][length // train].append(value)
    diagnosed = {(enc, task) for (enc, name, task), by in per_task.items() if name != "score" and 1 in by and 4 in by}
    out: dict[str, dict[str, dict[int, list[float]]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for (enc, name, task), by_multiple in per_task.items():
        if 1 in by_multiple and 4 in by_multiple and (enc, task) in diagnosed:
            for m, values in by_multiple.items():
                out[enc][name][m].append(sum(values) / len(values))
    return {enc: {name: {m: sum(v) / len(v) for m, v in ms.items()} for name, ms in cols.items()}
            for enc, cols in out.items()}  # fmt: skip


def why_view(sel: pd.DataFrame, order: list[str], measured: pd.DataFrame | None = None) -> list[dict[str, Any]]:
    """One row per encoding of ``order`` whose results store diagnostics at 1x and 4x: its cells (a sparkline and
    ``1x -> 4x`` per column) and the diagnostic that moved most; [] when no result stores them. A cell whose results
    store none takes the diagnostics and scores of a diagnostics run's models of it, ``measured``
    (:func:`pebench.analysis.mechanisms.measured_rows`)."""
    means = _means(measured_rows(sel, measured, DIAGNOSTICS))
    rows = []
    for enc in [e for e in order if e in means and any(d in means[e] for d in DIAGNOSTICS)]:
        cells, moves = [], []
        for name, header, (low, high) in COLUMNS:
            found = means[enc].get(name, {})
            values = [found.get(m) for m in MULTIPLES]
            if values[0] is None or values[-1] is None:
                cells.append({"name": name, "svg": "", "text": "–"})
                continue
            shown = [2**v if name == "logit_range_ratio" and v is not None else v for v in values]
            text = f"×{shown[-1]:.2f}" if name == "logit_range_ratio" else f"{shown[0]:.2f}→{shown[-1]:.2f}"
            label = f"{enc}, {header} at 1x, 2x, 4x: " + ", ".join("–" if v is None else f"{v:.2f}" for v in shown)
            cells.append({"name": name, "svg": sparkline(values, low, high, label), "text": text})
            if name != "score":
                moves.append((moved(name, shown[0], shown[-1], MULTIPLES[-1] / MULTIPLES[0]), name))
        most = max(moves)[1] if moves else ""
        for cell in cells:
            cell["most"] = cell["name"] == most
        rows.append({"encoding": enc, "cells": cells, "most": dict((n, h) for n, h, _ in COLUMNS).get(most, "")})
    return rows


HEADERS = [header for _, header, _ in COLUMNS]
