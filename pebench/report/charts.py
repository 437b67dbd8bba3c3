"""The leaderboard's pictures: score-vs-length plots, the heatmap, learning curves (SVG, :mod:`pebench.report.svg`)
and the attention maps (PNG data URIs of stored snapshots, :mod:`pebench.store.attention`)."""

from __future__ import annotations

import base64
import io
from collections import defaultdict
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from pebench.analysis.scoring import Group, finite
from pebench.report import svg
from pebench.report.colors import cmap_hex
from pebench.report.views import Assembled, TaskView
from pebench.store import attention
from pebench.store.load import curve_points


def length_plot(view: TaskView, markers: Mapping[str, str]) -> str:
    """Score vs evaluation length (log2 axis), one line per encoding, training length and chance marked."""
    series = []
    for row in view.rows:
        pts = [(float(L), c.value, c.half) for L, c in zip(view.lengths, row.cells, strict=True) if c.value is not None]
        series.append(svg.Series(row.encoding, row.color, markers[row.encoding], pts))  # type: ignore[arg-type]
    hlines = []
    if view.higher_is_better and view.chance is not None:
        hlines.append((100 * view.chance, "chance"))
    return svg.line_chart(
        series,
        x_scale="log2",
        y_scale="linear" if view.higher_is_better else "log",
        x_ticks=[float(L) for L in view.lengths],
        y_range=(0.0, 100.0) if view.higher_is_better else None,
        x_label="evaluation length",
        y_label=f"{view.metric} (%)" if view.higher_is_better else f"{view.metric} (lower is better)",
        vlines=[(float(view.train_length), "train length")],
        hlines=hlines,
    )


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
            for enc in sorted(curves[v.key])
        ]
        charts.append((v.label, series))
    if not charts:
        return ""
    return svg.panels(charts, ncols=min(3, len(charts)), x_label="step", y_label="training loss", y_scale="log",
                      markers=False)  # fmt: skip


ATTENTION_LEVELS = 64


@lru_cache(maxsize=1)
def _palette() -> list[int]:
    """magma_r in ATTENTION_LEVELS PNG palette entries, then white (future positions)."""
    import matplotlib as mpl

    lut = mpl.colormaps["magma_r"].resampled(ATTENTION_LEVELS)(np.arange(ATTENTION_LEVELS))[:, :3]
    return [int(round(255 * c)) for rgb in lut for c in rgb] + [255, 255, 255]


def _png_data_uri(matrix: np.ndarray) -> str:
    """A small PNG of an attention map: colour ~ sqrt(p) scaled to the map's maximum, in 64 levels; future positions
    white."""
    from PIL import Image

    m = np.sqrt(np.clip(np.nan_to_num(np.asarray(matrix, dtype=float)), 0.0, None))
    top = float(m.max()) or 1.0
    idx = np.rint(m / top * (ATTENTION_LEVELS - 1)).astype(np.uint8)
    idx[np.triu(np.ones(idx.shape, dtype=bool), k=1)] = ATTENTION_LEVELS
    img = Image.fromarray(idx, mode="P")
    img.putpalette(_palette())
    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=True)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def attention_maps(view: TaskView, groups: Mapping[str, Group]) -> None:
    """Per encoding: the stored last-layer maps (lowest seed with maps at the training length), one image per head."""
    for row in view.rows:
        g = groups[row.encoding]
        chosen = None
        for L in sorted(g.by_length, key=lambda x: (x != view.train_length, x)):
            for seed in sorted(g.by_length[L]):
                att = (g.by_length[L][seed].get("metrics") or {}).get("attention")
                if att and att.get("heads"):
                    chosen = (seed, att)
                    break
            if chosen:
                break
        if chosen is None:
            continue
        seed, att = chosen
        heads = attention.decode(att)
        if not heads:
            continue
        images = [{"label": f"head {i}", "src": _png_data_uri(h)} for i, h in enumerate(heads)]
        images.append({"label": "mean", "src": _png_data_uri(np.mean(heads, axis=0))})
        view.attention.append({
            "encoding": row.encoding, "color": row.color, "seed": seed, "layer": att.get("layer"),
            "tokens": len(att.get("tokens") or heads[0]), "images": images,
        })  # fmt: skip


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
