"""The report's grid heatmaps (addition's operand-length grid, ``metrics["grid"]``): per encoding, each cell's mean
over seeds, computed by hand from a hand-made database, drawn on the page with the cell's colour and hover text; no
section (and no change to the page) for results without cells."""

from __future__ import annotations

import re

import pytest

from pebench import store as db
from pebench.metrics import get as metric
from pebench.report import build_context, render_report
from pebench.report.colors import cmap_hex

RUN = {"package_version": "0", "torch_version": "t", "python_version": "3", "device": "cpu:test", "host": "h",
       "git_commit": "abcdef0123456789", "git_dirty": False, "tier": "full"}  # fmt: skip
CHANCE = 1 / 17  # addition with train_max=1: one of the 17 sums of two one-digit numbers

# encoding -> seed -> length -> {cell: exact match}; the diagonal cell is the case's own test split
GRIDS = {
    "alpha": {0: {1: {"1,1": 1.0}, 2: {"1,2": 0.5, "2,1": 1.0, "2,2": 0.0}},
              1: {1: {"1,1": 1.0}, 2: {"1,2": 0.25, "2,1": 0.5, "2,2": 0.0}}},
    "beta": {0: {1: {"1,1": 0.5}, 2: {"1,2": 0.0, "2,1": 0.0, "2,2": 0.0}}},
}  # fmt: skip
BY_HAND = {(1, 1): 100.0, (1, 2): 37.5, (2, 1): 75.0, (2, 2): 0.0}
"""alpha's means over its two seeds, in percent."""


def record(enc: str, seed: int, length: int, cells: dict[str, float], with_grid: bool, status: str = "ok") -> dict:
    diagonal = cells[f"{length},{length}"]
    result = lambda v: {"loss": 1.0, "token_accuracy": v, "sequence_accuracy": v, "perplexity": 2.7,  # noqa: E731
                        "n_samples": 4, "n_scored": 12}  # fmt: skip
    metrics: dict = {"splits": {"test": result(diagonal)}}
    if with_grid:
        metrics["grid"] = {"axes": ["digits of a", "digits of b"], "cells": {k: result(v) for k, v in cells.items()}}
    return {"case_id": f"{enc}-addition-L{length}-s{seed}", "encoding": enc, "encoding_version": "1",
            "task": "addition", "task_version": "2", "train_length": 1, "eval_length": length, "seed": seed,
            "config": {"task": {"name": "addition", "options": {"train_max": 1, "grid": with_grid}}},
            "config_hash": f"h-{enc}", "status": status, "metric": "exact_match", "higher_is_better": True,
            "chance_level": CHANCE, "score": diagonal if status == "ok" else None, "metrics": metrics}  # fmt: skip


def make_db(path, with_grid: bool) -> str:
    url = f"sqlite:///{path}"
    engine = db.open_db(url)
    run = db.start_run(engine, RUN)
    for enc, seeds in GRIDS.items():
        for seed, lengths in seeds.items():
            for length, cells in lengths.items():
                db.add_result(engine, run, record(enc, seed, length, cells, with_grid and enc == "alpha"))
    # a diverged result's cells never count
    db.add_result(engine, run, record("alpha", 2, 2, {"1,2": 1.0, "2,1": 1.0, "2,2": 1.0}, with_grid, "diverged"))
    db.finish_run(engine, run, "finished")
    engine.dispose()
    return url


def test_the_grid_of_each_encoding_holds_the_mean_over_seeds(tmp_path) -> None:
    ctx = build_context(make_db(tmp_path / "grid.db", with_grid=True), "latest")
    (grid,) = ctx["cell_grids"]["addition"]  # beta's results hold no cells: no heatmap for it
    assert grid.encoding == "alpha" and grid.axes == ("digits of a", "digits of b")
    assert grid.values == pytest.approx(BY_HAND)
    assert grid.seeds == {(1, 1): 2, (1, 2): 2, (2, 1): 2, (2, 2): 2}


def test_the_heatmap_is_on_the_page_with_each_cells_colour_and_value(tmp_path) -> None:
    out = tmp_path / "page.html"
    render_report(make_db(tmp_path / "grid.db", with_grid=True), out)
    html = out.read_text()
    assert html.count("<h3>addition: digits of a × digits of b</h3>") == 1
    assert html.count('class="cellgrid"') == 1 and "training square" in html
    em = metric("exact_match")
    for (a, b), value in BY_HAND.items():
        tip = f"digits of a {a}, digits of b {b}: {value:.{em.digits}f} (2 seeds)"
        fill, _ = cmap_hex(em.normalise(value / 100, CHANCE))
        assert re.search(rf'fill="{fill}"><title>{re.escape(tip)}</title>', html), tip
    # rows are the first operand: the cell (2, 1) is in the second row, first column
    svg = html[html.index('class="cellgrid"') :]
    x, y = re.search(r'<rect x="([\d.]+)" y="([\d.]+)"[^>]*><title>digits of a 2, digits of b 1:', svg).groups()
    x0, y0 = re.search(r'<rect x="([\d.]+)" y="([\d.]+)"[^>]*><title>digits of a 1, digits of b 1:', svg).groups()
    assert float(x) == float(x0) and float(y) > float(y0)


def test_no_grid_no_heatmap(tmp_path) -> None:
    url = make_db(tmp_path / "plain.db", with_grid=False)
    assert build_context(url, "latest")["cell_grids"] == {}
    out = tmp_path / "page.html"
    render_report(url, out)
    html = out.read_text()
    assert "cellgrid" not in html and "digits of a" not in html
