"""The leaderboard's pictures: score-vs-length plots (small multiples by encoding family), the heatmap and the
learning curves (SVG, :mod:`pebench.report.svg`); the attention maps are in :mod:`pebench.report.attn`."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from pebench.analysis.scoring import finite
from pebench.report import families, svg
from pebench.report.colors import cmap_hex
from pebench.report.views import Assembled, TaskView
from pebench.store.load import MODEL_KEY, curve_owners, curve_points

PANEL_W, PANEL_H = 330, 220


def _tip(view: TaskView, enc: str, length: int, value: float, half: float | None) -> str:
    digits = view.metric_def.digits if view.metric_def is not None else 1
    unit = "%" if view.higher_is_better else ""
    spread = f" ± {half:.{digits}f}" if half else ""
    return f"{enc}, length {length}: {value:.{digits}f}{unit}{spread}"


def length_plot(view: TaskView, markers: Mapping[str, str]) -> str:
    """Score vs evaluation length (log2 axis), one small chart per encoding family (:mod:`pebench.report.families`)
    with one line per encoding, all on the same axes; training length and chance marked. HTML: a ``div`` of one
    ``<svg>`` per family, each in a ``div.panel`` that the page's script hides when the filter hides all its lines."""
    by_enc = {row.encoding: row for row in view.rows}
    all_series: dict[str, svg.Series] = {}
    for row in view.rows:
        cells = [(L, c) for L, c in zip(view.lengths, row.cells, strict=True) if c.value is not None]
        pts = [(float(L), float(c.value), c.half) for L, c in cells]  # type: ignore[arg-type]
        tips = [_tip(view, row.encoding, L, c.value, c.half) for L, c in cells]  # type: ignore[arg-type]
        all_series[row.encoding] = svg.Series(row.encoding, row.color, markers[row.encoding], pts, tips)
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


def heatmap(assembled: Assembled, order: Sequence[str]) -> str:
    """Encoding x task heatmaps of the normalised OOD and ID scores (rows in leaderboard order)."""
    keys = [t.key for t in assembled.tasks]
    panels = []
    for kind, title in (("ood", "OOD normalised score"), ("id", "ID normalised score")):
        panels.append((title, [[assembled.heat[kind].get(e, {}).get(k) for k in keys] for e in order]))
    return svg.heatmap([(e, assembled.colors[e]) for e in order], keys, panels, cmap_hex)


CURVE_COLUMNS = ("loss", "val_1x", "val_2x")
"""What :func:`curves` averages: the training loss and the validation values at 1x and 2x the training length."""


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


def curves(engine: Any, sel: pd.DataFrame, keys: Mapping[tuple[str, int], tuple[str, str]]) -> dict:
    """Column of :data:`CURVE_COLUMNS` -> task key -> encoding -> [(step, mean over seeds)] from one result per
    trained model, the one at its training length where there is one (a ``--slim`` merge keeps the curve there
    only); a step enters a line only where the value is finite."""
    if sel.empty:
        return {}
    cols = ["id", "eval_length", *MODEL_KEY]
    reps = sel[sel["id"].isin(set(curve_owners(sel[cols].to_dict("records")).values()))]
    owner = {int(r.id): (keys[(r.task, int(r.train_length))][0], r.encoding) for r in reps.itertuples()}
    points: dict[str, dict[tuple[str, str], dict[int, list[float]]]] = {
        c: defaultdict(lambda: defaultdict(list)) for c in CURVE_COLUMNS
    }
    for result_id, step, *values in curve_points(engine, owner):
        for column, value in zip(CURVE_COLUMNS, values, strict=True):
            if finite(value):
                points[column][owner[result_id]][int(step)].append(float(value))
    out: dict[str, dict[str, dict[str, list[tuple[int, float]]]]] = {c: defaultdict(dict) for c in CURVE_COLUMNS}
    for column, by_owner in points.items():
        for (key, enc), by_step in by_owner.items():
            out[column][key][enc] = [(step, sum(v) / len(v)) for step, v in sorted(by_step.items())]
    return out
