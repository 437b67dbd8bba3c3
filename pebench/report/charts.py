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
from pebench.store.load import curve_points

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


def curves(engine: Any, sel: pd.DataFrame, keys: Mapping[tuple[str, int], tuple[str, str]]) -> dict:
    """Task key -> encoding -> [(step, mean loss over seeds)] from one result per trained model."""
    if sel.empty:
        return {}
    reps = sel.sort_values("id").drop_duplicates(["task", "train_length", "encoding", "seed", "config_hash"])
    owner = {int(r.id): (keys[(r.task, int(r.train_length))][0], r.encoding) for r in reps.itertuples()}
    points: dict[tuple[str, str], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for result_id, step, loss in curve_points(engine, owner):
        if finite(loss):
            points[owner[result_id]][int(step)].append(float(loss))
    out: dict[str, dict[str, list[tuple[int, float]]]] = defaultdict(dict)
    for (key, enc), by_step in points.items():
        out[key][enc] = [(step, sum(v) / len(v)) for step, v in sorted(by_step.items())]
    return out
