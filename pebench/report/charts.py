"""The leaderboard's pictures: score-vs-length plots (small multiples by encoding family) and the learning curves
(SVG, :mod:`pebench.report.svg`); the attention maps are in :mod:`pebench.report.attn`, the encoding x task overview
(an HTML table) in :mod:`pebench.report.overview`."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import pandas as pd

from pebench.analysis.scoring import finite
from pebench.report import families, svg
from pebench.report.views import Entry, TaskView

PANEL_W, PANEL_H = 330, 220


def _tip(view: TaskView, enc: str, cells: Sequence[tuple[int, Any]]) -> str:
    """A line's hover text: its value at every length, ``rope: 99.2% at length 64, 71.0% ± 2.1 at 128, ...``."""
    digits = view.metric_def.digits if view.metric_def is not None else 1
    unit = "%" if view.higher_is_better else ""
    values = [f"{c.value:.{digits}f}{unit}" + (f" ± {c.half:.{digits}f}" if c.half else "") + f" at {L}"
              for L, c in cells]  # fmt: skip
    return f"{enc}: " + ", ".join(values).replace(" at ", " at length ", 1)


def length_plot(view: TaskView, markers: Mapping[str, str]) -> str:
    """Score vs evaluation length (log2 axis), one small chart per encoding family (:mod:`pebench.report.families`)
    with one line per encoding, all on the same axes; training length and chance marked; a line's values on hover
    (one title per line). HTML: a ``div`` of one
    ``<svg>`` per family, each in a ``div.panel`` that the page's script hides when the filter hides all its lines."""
    by_enc = {row.encoding: row for row in view.rows}
    all_series: dict[str, svg.Series] = {}
    for row in view.rows:
        cells = [(L, c) for L, c in zip(view.lengths, row.cells, strict=True) if c.value is not None]
        pts = [(float(L), float(c.value), c.half) for L, c in cells]  # type: ignore[arg-type]
        tip = _tip(view, row.encoding, cells)
        all_series[row.encoding] = svg.Series(row.encoding, row.color, markers[row.encoding], pts, tip)
    y_range: tuple[float, float] | None = (0.0, 100.0)
    if not view.higher_is_better:  # one log range for every panel, so that they compare
        ys = [p[1] for s in all_series.values() for p in s.points if p[1] > 0]
        y_range = (min(ys) / 1.15, max(ys) * 1.15) if ys else None
    hlines = [(100 * view.chance, "chance")] if view.higher_is_better and view.chance is not None else []
    groups = families.grouped(by_enc)
    legend_w = max(svg.legend_width(list(all_series.values())), 60.0)
    out = ['<div class="multiples">']
    for family, names in groups:
        chart = svg.line_chart(
            [all_series[n] for n in names],
            width=PANEL_W,
            height=PANEL_H,
            legend_w=legend_w,
            refs_in_legend=False,
            title=families.TITLES[family],
            x_scale="log2",
            y_scale="linear" if view.higher_is_better else "log",
            x_ticks=[float(L) for L in view.lengths],
            y_range=y_range,
            x_label="evaluation length",
            y_label=f"{view.unit}" if view.higher_is_better else f"{view.metric} (lower is better)",
            vlines=[(float(view.train_length), "train length")],
            hlines=hlines,
        )
        out.append(f'<div class="panel" data-family="{family}">{chart}</div>')
    out.append("</div>")
    return "".join(out)


CURVE_COLUMNS = ("loss", "val_1x", "val_2x")
"""What :func:`curves` averages: the training loss and the validation values at 1x and 2x the training length."""

CURVE_LEADERS = 8
"""The learning curves draw the first this many encodings of the leaderboard (and the run's own beside a
reference, and those asked for with ``pebench report --curves``): 44 lines in one small chart read as none."""


def curve_encodings(entries: Sequence[Entry], yours: Sequence[str] = (), asked: Sequence[str] | None = None
                    ) -> list[str]:  # fmt: skip
    """The encodings whose learning curves the page draws, in leaderboard order: the leaders
    (:data:`CURVE_LEADERS`), ``yours`` and ``asked`` (None: no more; ``["all"]``: every encoding)."""
    order = [e.encoding for e in entries]
    if asked is not None and "all" in asked:
        return order
    wanted = set(order[:CURVE_LEADERS]) | set(yours) | set(asked or ())
    return [e for e in order if e in wanted]


def only(by_task: Mapping[str, Mapping[str, Any]], encodings: Collection[str]) -> dict[str, dict[str, Any]]:
    """``by_task`` (task key -> encoding -> line) with the lines of ``encodings`` only."""
    return {k: {e: line for e, line in lines.items() if e in encodings} for k, lines in by_task.items()}


def learning_curves(
    curves: Mapping[str, Mapping[str, list[tuple[int, float]]]],
    views: Sequence[TaskView],
    colors: Mapping[str, str],
    markers: Mapping[str, str],
) -> str:
    """Training loss vs step, one panel per task, one line per encoding (mean over seeds)."""
    charts = []
    for v in views:
        if not curves.get(v.key):
            continue
        series = [
            svg.Series(enc, colors[enc], markers[enc], [(float(s), float(l), None) for s, l in curves[v.key][enc]])
            for enc in families.ordered(curves[v.key])
        ]
        charts.append((v.label, series))
    if not charts:
        return ""
    return svg.panels(charts, ncols=min(3, len(charts)), x_label="step", y_label="training loss", y_scale="log",
                      markers=False)  # fmt: skip


def validation_curves(
    curves: Mapping[str, Mapping[str, Mapping[str, list[tuple[int, float]]]]],
    views: Sequence[TaskView],
    colors: Mapping[str, str],
    markers: Mapping[str, str],
) -> str:
    """The validation metric vs step at the training length and at twice it: one row per task, its 1x and 2x
    panels side by side, one line per encoding (mean over seeds); empty when no curve has validation points."""
    charts, ranges = [], []
    for v in views:
        lines = {n: curves.get(f"val_{n}x", {}).get(v.key) for n in (1, 2)}
        ys = [y for by_enc in lines.values() if by_enc for line in by_enc.values() for _, y in line]
        if not ys:
            continue
        pad = (max(ys) - min(ys)) * 0.06 or abs(max(ys)) * 0.1 or 1.0
        direction = "" if v.higher_is_better else ", lower is better"
        for n, by_enc in lines.items():
            if not by_enc:
                continue
            series = [svg.Series(enc, colors[enc], markers[enc], [(float(s), float(y), None) for s, y in by_enc[enc]])
                      for enc in families.ordered(by_enc)]  # fmt: skip
            charts.append((f"{v.label}: {v.metric} at {n}\u00d7 ({v.train_length * n}{direction})", series))
            ranges.append((min(ys) - pad, max(ys) + pad))  # a task's 1x and 2x on one scale
    if not charts:
        return ""
    return svg.panels(charts, ncols=2, y_ranges=ranges, x_label="step", y_label="validation metric", markers=False)


def curves(points_of: Mapping[int, Sequence[tuple[Any, ...]]], sel: pd.DataFrame,
           keys: Mapping[tuple[str, int], tuple[str, str]]) -> dict:  # fmt: skip
    """Column of :data:`CURVE_COLUMNS` -> task key -> encoding -> [(step, mean over seeds)] from the learning curves
    ``points_of`` (result id -> ``(step, loss, val_1x, val_2x)``, read with the rows: one result per trained model,
    the one at its training length where there is one, :func:`pebench.records.frame.curve_owners`) of the results of
    ``sel``; a step enters a line only where the value is finite."""
    if sel.empty:
        return {}
    reps = sel[sel["id"].isin(set(points_of))]
    owner = {int(r.id): (keys[(r.task, int(r.train_length))][0], r.encoding) for r in reps.itertuples()}
    points: dict[str, dict[tuple[str, str], dict[int, list[float]]]] = {
        c: defaultdict(lambda: defaultdict(list)) for c in CURVE_COLUMNS
    }
    for result_id in sorted(owner):
        for step, *values in points_of[result_id]:
            for column, value in zip(CURVE_COLUMNS, values, strict=True):
                if finite(value):
                    points[column][owner[result_id]][int(step)].append(float(value))
    out: dict[str, dict[str, dict[str, list[tuple[int, float]]]]] = {c: defaultdict(dict) for c in CURVE_COLUMNS}
    for column, by_owner in points.items():
        for (key, enc), by_step in by_owner.items():
            out[column][key][enc] = [(step, sum(v) / len(v)) for step, v in sorted(by_step.items())]
    return out
