"""View models of the leaderboard: per-task tables, the leaderboard rows, split grids and the header, assembled from
the selected results with the scoring layer (:mod:`pebench.analysis.scoring`). No SQL and no drawing here."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from pebench.analysis import noise, reach, scoring
from pebench.analysis.ranking import Ranked, Ranking
from pebench.analysis.reach import Reach
from pebench.analysis.scoring import Group, finite, mean
from pebench.analysis.stats import t_interval
from pebench.metrics import Metric
from pebench.report import board, families, rates, seeds
from pebench.report.colors import cmap_hex, encoding_colors
from pebench.report.svg import MARKER_SHAPES
from pebench.status import ResultStatus


@dataclass
class Cell:
    """One table cell: a mean over seeds in display units, its interval, and the change since the previous run."""

    value: float | None = None
    half: float | None = None
    n: int = 0
    note: str = ""
    delta: float | None = None
    delta_good: bool | None = None
    best: bool = False
    digits: int = 1
    tip: str = ""
    half_tip: str = ""
    """What the ± is, when it is not the interval over the cell's own seeds."""

    @property
    def text(self) -> str:
        return "–" if self.value is None else f"{self.value:.{self.digits}f}"

    @property
    def half_text(self) -> str:
        if self.half is None or round(self.half, self.digits) == 0:
            return ""
        return f"±{self.half:.{self.digits}f}"

    @property
    def sort_value(self) -> str:
        return "" if self.value is None else repr(round(self.value, 6))

    @property
    def delta_text(self) -> str:
        if self.delta is None:
            return ""
        if round(abs(self.delta), self.digits) == 0:
            return "="
        arrow = "▲" if self.delta > 0 else "▼"
        return f"{arrow}{abs(self.delta):.{self.digits}f}"

    @property
    def delta_class(self) -> str:
        if self.delta is None or round(abs(self.delta), self.digits) == 0:
            return "same"
        return "better" if self.delta_good else "worse"


@dataclass
class TaskRow:
    encoding: str
    color: str
    marker: str
    id_cell: Cell
    cells: list[Cell]
    gap: Cell
    ood_norm: Cell
    n_seeds: int
    failures: int
    reach: Reach | None = None
    training: str = ""
    """How training ended over the seeds (``--stop``), e.g. ``2 learned, 1 budget · 70-200 of 200 steps``."""
    stop_reasons: dict[str, int] = field(default_factory=dict)
    """Seeds per stop reason (:func:`pebench.report.seeds.stop_reasons`); empty from before ``--stop``."""
    seeds_tip: str = ""
    """Why this many seeds (``--seeds auto``): each added seed's reason, or that the first one decided."""


@dataclass
class TaskView:
    key: str
    name: str
    label: str
    anchor: str
    metric: str
    higher_is_better: bool
    chance: float | None
    train_length: int
    lengths: list[int]
    rows: list[TaskRow]
    config_text: str
    unit: str
    show_id: bool = True
    """Whether the table needs its own ID column (several lengths up to the training length)."""
    plot_svg: str = ""
    split_grids: list[dict[str, Any]] = field(default_factory=list)
    splits: list[str] = field(default_factory=list)
    attention: list[dict[str, Any]] = field(default_factory=list)
    attention_note: str = ""
    metric_def: Metric | None = None
    whole_budget: bool = False
    """Whether every model of the task trained its whole budget (:func:`pebench.report.seeds.whole_budget`)."""


@dataclass
class Entry:
    """One leaderboard row."""

    encoding: str
    color: str
    id: Cell
    ood: Cell
    n_tasks: int
    total_tasks: int
    n_seeds: int
    failures: int
    rank: int = 0
    seeds_low: int = 0
    """The fewest seeds any of its cells has (:attr:`seeds_text` shows the range where cells differ)."""
    keeps_2x: int = 0
    """On how many tasks it keeps 90% of its score up to 2x and 4x the training length (:func:`reach.keeps`)."""
    keeps_4x: int = 0
    ranked: Ranked | None = None
    """Its row of the OOD ranking: rank range, tie group, the other aggregations (None for a partial row)."""
    group_start: bool = False
    """The first row of its tie group."""

    @property
    def rank_text(self) -> str:
        """The rank range (``"2-7"``), or ``"apart"`` for a row ranked apart."""
        return self.ranked.range_text if self.ranked is not None else str(self.rank)

    @property
    def group(self) -> int | None:
        return self.ranked.group if self.ranked is not None else None

    @property
    def seeds_text(self) -> str:
        """``"1-3"`` where its cells have different numbers of seeds, else the number."""
        low = self.seeds_low or self.n_seeds
        return f"{low}-{self.n_seeds}" if low < self.n_seeds else str(self.n_seeds)

    @property
    def partial(self) -> bool:
        return self.n_tasks < self.total_tasks


def _cell(values: Mapping[int, float] | Sequence[float], digits: int) -> Cell:
    vals = list(values.values()) if isinstance(values, Mapping) else list(values)
    vals = [v for v in vals if finite(v)]
    if not vals:
        return Cell(digits=digits)
    value, half, n = t_interval(vals)
    return Cell(value=value, half=half, n=n, digits=digits)


def task_keys(groups: Mapping[tuple[str, int], Any]) -> dict[tuple[str, int], tuple[str, str]]:
    """(task, train length) -> (key, label); the train length joins the label only where a task has several."""
    counts: dict[str, int] = defaultdict(int)
    for task, _ in groups:
        counts[task] += 1
    out = {}
    for task, train_length in sorted(groups):
        if counts[task] > 1:
            out[(task, train_length)] = (f"{task}@{train_length}", f"{task} (train length {train_length})")
        else:
            out[(task, train_length)] = (task, task)
    return out


@dataclass
class Assembled:
    tasks: list[TaskView]
    entries: list[Entry]
    colors: dict[str, str]
    markers: dict[str, str]
    heat: dict[str, dict[str, dict[str, float | None]]]
    has_deltas: bool
    groups: dict[tuple[str, int], dict[str, Group]]
    keys: dict[tuple[str, int], tuple[str, str]]
    ranking: Ranking | None = None
    ood_per_seed: dict[str, dict[str, dict[int, float]]] = field(default_factory=dict)
    """encoding -> task key -> seed -> OOD normalised score (what the ranking ranks)."""
    sigmas: dict[str, float | None] = field(default_factory=dict)
    """task key -> the task's measured seed-to-seed spread (None where unmeasured)."""


@dataclass
class _Scores:
    """What the per-task tables collect for the leaderboard and the heatmap, per encoding."""

    id_norm: dict[str, dict[str, dict[int, float]]] = field(default_factory=lambda: defaultdict(dict))
    ood_norm: dict[str, dict[str, dict[int, float]]] = field(default_factory=lambda: defaultdict(dict))
    prev_id: dict[str, dict[str, float]] = field(default_factory=lambda: defaultdict(dict))
    prev_ood: dict[str, dict[str, float]] = field(default_factory=lambda: defaultdict(dict))
    failures: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    seeds: dict[str, set[int]] = field(default_factory=lambda: defaultdict(set))
    sigmas: dict[str, float | None] = field(default_factory=dict)
    has_deltas: bool = False

    def id_mean(self, enc: str, key: str) -> float:
        return mean(self.id_norm[enc].get(key, {}).values()) or 0.0


def _delta(cell: Cell, previous: float | None, higher_is_better: bool) -> bool:
    """Set ``cell``'s change since the previous run; whether there was one."""
    if previous is None or cell.value is None:
        return False
    cell.delta = cell.value - previous
    cell.delta_good = (cell.delta > 0) == higher_is_better
    return True


def _length_cells(g: Group, pg: Group | None, lengths: Sequence[int], m: Metric, acc: _Scores) -> list[Cell]:
    """One encoding's cell per evaluated length: the mean over its ok seeds, the count of each other status, and
    the change since the previous run (``pg``), noted in ``acc``."""
    cells = []
    for L in lengths:
        per = g.by_length.get(L, {})
        c = _cell([m.display(r["score"]) for r in per.values() if r["status"] == ResultStatus.OK], m.digits)
        bad = [r["status"] for r in per.values() if r["status"] != ResultStatus.OK]
        if bad:
            c.note = ", ".join(f"{bad.count(s)} {s}" for s in sorted(set(bad)))
        if pg is not None and L in pg.by_length:
            pm = mean(m.display(r["score"]) for r in pg.by_length[L].values() if r["status"] == ResultStatus.OK)
            acc.has_deltas |= _delta(c, pm, m.higher_is_better)
        cells.append(c)
    return cells


def _previous(id_cell: Cell, gap: Cell, pg: Group, split: tuple[list[int], list[int]], m: Metric, acc: _Scores,
              enc: str, key: str) -> None:  # fmt: skip
    """The change of one encoding's ID and gap cells since the previous run (``pg``), and its previous normalised
    ID and OOD scores on task ``key`` for the leaderboard (``acc``); ``split``: the ID and OOD lengths."""
    id_lengths, ood_lengths = split
    _delta(id_cell, mean(scoring.per_seed_metric(pg, id_lengths, m).values()), m.higher_is_better)
    _delta(gap, mean(scoring.gap_per_seed(pg, id_lengths, ood_lengths, m).values()), False)
    pi = mean(scoring.per_seed_norm(pg, id_lengths).values())
    po = mean(scoring.per_seed_norm(pg, ood_lengths).values())
    if pi is not None:
        acc.prev_id[enc][key] = pi
    if po is not None:
        acc.prev_ood[enc][key] = po


def _mark_task_best(rows: Sequence[TaskRow], enc_groups: Mapping[str, Group], lengths: Sequence[int],
                    seed_norms: Mapping[str, tuple[dict[int, float], dict[int, float]]], sigma: float | None,
                    lower: bool, id_mean: Callable[[str], float]) -> None:  # fmt: skip
    """Mark the best of each column beyond the noise of its protocol (``sigma``, :mod:`pebench.analysis.noise`;
    ``lower``: lower is better): every length, ID, the OOD score, and the gap among the encodings that learned the
    task (``id_mean``: an encoding's mean normalised ID score)."""
    for col, L in enumerate(lengths):
        _mark_best([r.cells[col] for r in rows], [_norms(enc_groups[r.encoding], L) for r in rows], sigma, lower)
    _mark_best([r.id_cell for r in rows], [list(seed_norms[r.encoding][0].values()) for r in rows], sigma, lower)
    learned = [r for r in rows if id_mean(r.encoding) >= scoring.LEARNED]
    gaps = [[o - i for s, i in seed_norms[r.encoding][0].items() if (o := seed_norms[r.encoding][1].get(s)) is not None]
            for r in learned]  # fmt: skip
    _mark_best([r.gap for r in learned], gaps, sigma * 2**0.5 if sigma is not None else None, True)
    _mark_best([r.ood_norm for r in rows], [list(seed_norms[r.encoding][1].values()) for r in rows], sigma)


def _task_view(
    tk: tuple[str, int], key: str, label: str, enc_groups: Mapping[str, Group], prev_groups: Mapping[str, Group],
    colors: Mapping[str, str], markers: Mapping[str, str], acc: _Scores,
) -> TaskView:  # fmt: skip
    """The table of one task (rows best first) and its contribution to the leaderboard (``acc``)."""
    task_name, train_length = tk
    first = next(iter(next(iter(next(iter(enc_groups.values())).by_length.values())).values()))
    m = scoring.metric_of(first)
    chance = float(first["chance_level"]) if finite(first["chance_level"]) else None
    lengths = sorted({L for g in enc_groups.values() for L in g.by_length})
    id_lengths, ood_lengths = scoring.split_lengths(lengths, train_length)
    rows: list[TaskRow] = []
    seed_norms: dict[str, tuple[dict[int, float], dict[int, float]]] = {}
    for enc in sorted(enc_groups):
        g, pg = enc_groups[enc], prev_groups.get(enc)
        acc.seeds[enc].update(g.seeds())
        n_fail = sum(1 for r in g.rows() if r["status"] != ResultStatus.OK)
        acc.failures[enc] += n_fail
        cells = _length_cells(g, pg, lengths, m, acc)
        id_cell = _cell(scoring.per_seed_metric(g, id_lengths, m), m.digits)
        gap = _cell(scoring.gap_per_seed(g, id_lengths, ood_lengths, m), m.digits)
        i_norm, o_norm = scoring.per_seed_norm(g, id_lengths), scoring.per_seed_norm(g, ood_lengths)
        if pg is not None:
            _previous(id_cell, gap, pg, (id_lengths, ood_lengths), m, acc, enc, key)
        seed_norms[enc] = (i_norm, o_norm)
        far = reach.reach({L: [r["norm"] for r in per.values()] for L, per in g.by_length.items()}, train_length)
        if i_norm:
            acc.id_norm[enc][key] = i_norm
        if o_norm:
            acc.ood_norm[enc][key] = o_norm
        at_train = g.by_length.get(train_length, {}).values()  # one model per seed
        rows.append(TaskRow(encoding=enc, color=colors[enc], marker=markers[enc], id_cell=id_cell, cells=cells,
                            gap=gap, ood_norm=_cell(o_norm, 2), n_seeds=len(g.seeds()), failures=n_fail, reach=far,
                            training=seeds.training_text(at_train), stop_reasons=seeds.stop_reasons(at_train),
                            seeds_tip=seeds.seeds_tip(g.rows())))  # fmt: skip
    grid = first.get("lr_grid") if isinstance(first.get("lr_grid"), str) else None
    sigma = noise.task_sigma(task_name, first.get("config"), lr_grid=grid)
    acc.sigmas[key] = sigma
    _mark_task_best(rows, enc_groups, lengths, seed_norms, sigma, not m.higher_is_better,
                    lambda enc: acc.id_mean(enc, key))  # fmt: skip
    # rows best first: by OOD normalised score, then ID score, then name
    rows.sort(key=lambda r: (r.ood_norm.value is None, -(r.ood_norm.value or 0.0), -acc.id_mean(r.encoding, key),
                             r.encoding))  # fmt: skip
    return TaskView(
        key=key,
        name=task_name,
        label=label,
        anchor="task-" + "".join(ch if ch.isalnum() else "-" for ch in key),
        metric=m.name,
        higher_is_better=m.higher_is_better,
        chance=chance,
        train_length=train_length,
        lengths=lengths,
        rows=rows,
        config_text=rates.config_text(first, (r for g in enc_groups.values() for r in g.rows())),
        unit=m.unit,
        show_id=len(id_lengths) > 1,
        metric_def=m,
        whole_budget=seeds.whole_budget(r.stop_reasons for r in rows),
    )


def _entries(encodings: Sequence[str], groups: Mapping[tuple[str, int], Any], colors: Mapping[str, str],
             acc: _Scores) -> tuple[list[Entry], Ranking]:  # fmt: skip
    """The leaderboard rows in the order of the OOD ranking (:mod:`pebench.report.board`), and that ranking."""
    ood_rank, id_rank = board.rankings(acc.ood_norm, acc.id_norm, acc.sigmas)
    entries = []
    for enc in board.order(ood_rank, encodings):
        entry = Entry(
            encoding=enc,
            color=colors[enc],
            id=Cell(digits=3, **board.cell_fields(id_rank.row(enc))),
            ood=Cell(digits=3, **board.cell_fields(ood_rank.row(enc))),
            ranked=ood_rank.row(enc),
            n_tasks=sum(1 for tk in groups if enc in groups[tk]),
            total_tasks=len(groups),
            n_seeds=len(acc.seeds[enc]),
            failures=acc.failures[enc],
            seeds_low=min((len(s) for s in acc.ood_norm.get(enc, {}).values()), default=0),
        )
        for cell, cur, old in ((entry.id, acc.id_norm.get(enc, {}), acc.prev_id.get(enc, {})),
                               (entry.ood, acc.ood_norm.get(enc, {}), acc.prev_ood.get(enc, {}))):  # fmt: skip
            common = [k for k in cur if k in old]
            if common and cell.value is not None:
                cell.delta = sum(mean(cur[k].values()) - old[k] for k in common) / len(common)  # type: ignore[operator]
                cell.delta_good = cell.delta > 0
        entries.append(entry)
    for i, e in enumerate(entries, 1):
        e.rank = i
        e.group_start = e.group is not None and (i == 1 or entries[i - 2].group != e.group)
    for attr, ranking in (("id", id_rank), ("ood", ood_rank)):  # best: alone in the first tie group
        for e in entries:
            getattr(e, attr).best = e.encoding == board.leader(ranking)
    return entries, ood_rank


def assemble(sel: pd.DataFrame, prev: pd.DataFrame) -> Assembled:
    """Per-task tables and the leaderboard from the selected rows (and the previous comparable rows)."""
    sel = scoring.add_normalised(sel)
    prev = scoring.add_normalised(prev) if not prev.empty else prev
    groups = scoring.groups_by_task(sel)
    prev_groups = scoring.groups_by_task(prev) if not prev.empty else {}
    encodings = sorted(set(sel["encoding"]))
    in_family_order = families.ordered(encodings)  # so that the members of one family differ in colour and marker
    colors = encoding_colors(in_family_order)
    markers = {e: MARKER_SHAPES[i % len(MARKER_SHAPES)] for i, e in enumerate(in_family_order)}
    keys = task_keys(groups)
    acc = _Scores()
    views = [
        _task_view(tk, *keys[tk], groups[tk], prev_groups.get(tk, {}), colors, markers, acc) for tk in sorted(groups)
    ]
    entries, ranking = _entries(encodings, groups, colors, acc)
    heat = {
        "ood": {e: {k: mean(v.values()) for k, v in acc.ood_norm.get(e, {}).items()} for e in encodings},
        "id": {e: {k: mean(v.values()) for k, v in acc.id_norm.get(e, {}).items()} for e in encodings},
    }
    _split_grids(views, groups, keys)
    return Assembled(views, entries, colors, markers, heat, acc.has_deltas, groups, keys, ranking,
                     {e: dict(v) for e, v in acc.ood_norm.items()}, dict(acc.sigmas))  # fmt: skip


def _norms(group: Group, length: int) -> list[float]:
    """The per-seed normalised scores of one encoding at one length."""
    return [float(r["norm"]) for r in group.by_length.get(length, {}).values() if finite(r["norm"])]


def _mark_best(cells: Sequence[Cell], samples: Sequence[Sequence[float]], sigma: float | None,
               lower_is_better: bool = False) -> None:  # fmt: skip
    """Highlight the one cell that beats every other beyond the noise (:func:`pebench.analysis.noise.marked_best`,
    on per-seed normalised ``samples``) and is not tied with another at the shown precision; else none."""
    flags = noise.marked_best(samples, sigma)
    shown = scoring.best_of([c.value for c in cells], cells[0].digits if cells else 0,
                            min if lower_is_better else max)  # fmt: skip
    unique = sum(shown) == 1
    for c, best in zip(cells, flags, strict=True):
        c.best = best and unique and c.value is not None


def _split_grids(
    views: list[TaskView], groups: Mapping[tuple[str, int], Mapping[str, Group]], keys: Mapping[tuple[str, int], Any]
) -> None:
    """For tasks evaluated on several splits (e.g. one per passkey depth): split x length grid per encoding, in the
    task's own metric, coloured by its normalised score."""
    by_key = {keys[tk][0]: tk for tk in groups}
    for view in views:
        enc_groups = groups[by_key[view.key]]
        splits: list[str] = []
        for g in enc_groups.values():
            for r in g.rows():
                for s in (r.get("metrics") or {}).get("splits") or {}:
                    if s not in splits:
                        splits.append(s)
        if len(splits) < 2:
            continue
        view.splits = splits
        m = view.metric_def
        for row in view.rows:
            g = enc_groups[row.encoding]
            grid = []
            for s in splits:
                line = []
                for L in view.lengths:
                    value = mean(
                        (((r.get("metrics") or {}).get("splits") or {}).get(s) or {}).get(m.key)
                        for r in g.by_length.get(L, {}).values() if r["status"] == ResultStatus.OK
                    )
                    bg, fg = cmap_hex(m.normalise(value, view.chance) if value is not None else None)
                    shown = m.display(value)
                    line.append({"text": "–" if shown is None else f"{shown:.{m.digits}f}", "bg": bg, "fg": fg})
                grid.append({"split": s, "cells": line})
            view.split_grids.append({"encoding": row.encoding, "color": row.color, "rows": grid})
