"""The leaderboard: one self-contained HTML page rendered from the results database.

:func:`render_report` reads the results (:func:`pebench.results.load`), assembles the tables and plots and renders
the Jinja2 templates in ``pebench/report_templates/`` (autoescape on: every string from the database is text, never
markup). Plots are inline SVG drawn by :mod:`pebench.report_svg` (one colour and marker per encoding on every plot),
attention maps small PNG data URIs (matplotlib's colormaps, Pillow), the one script is inlined too: the page opens
from disk with no network.

Definitions (also printed on the page):

* **In-distribution (ID)** lengths are evaluation lengths up to the training length; **out-of-distribution (OOD)**
  lengths are longer ones.
* **Normalised score** of one result, 0 = chance and 1 = perfect, clipped to [0, 1]:
  ``(score - chance) / (1 - chance)`` for higher-is-better metrics (accuracy), and ``1 - ln(ppl) / ln(C)`` for
  lower-is-better ones (perplexity; ``C`` is the perplexity of the uniform predictor, the task's chance level, or
  the vocabulary size when the task declares no chance level above 1): the fraction of the uniform predictor's
  cross-entropy the model removes. A diverged model scores 0 (chance); an errored case is left out and counted.
* **Aggregate** of an encoding: for each seed, the mean over tasks of that seed's per-task score (the mean normalised
  score over the task's ID, respectively OOD, lengths); then the mean over seeds with a 95% BCa bootstrap interval
  (:func:`pebench.stats.estimate`). The leaderboard is ranked by the OOD aggregate; it shows on how many of the
  run's tasks each encoding ran, so a partial run is visible.
* Per-task cells are means over seeds with a Student-t 95% interval (cheap enough for thousands of cells).
* **Generalisation gap**: ID score minus mean OOD score (accuracy, in points), or mean OOD minus ID perplexity; lower
  is better.
* **Deltas** compare with the previous comparable run: the latest earlier run holding results of the same
  (encoding, task) configuration (same config hash).
"""

from __future__ import annotations

import base64
import datetime as dt
import io
import math
import os
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pebench.errors import DatabaseError, PebenchError
from pebench.report_svg import MARKER_SHAPES

MAX_FAILURES_SHOWN = 200
RUN_CHOICES = "a run id, latest, previous or all"


class ReportError(PebenchError):
    """Bad input to the report (run selection, output path)."""


# -- small numeric helpers ---------------------------------------------------------------------------------------
def _finite(v: Any) -> bool:
    return v is not None and isinstance(v, (int, float, np.floating, np.integer)) and math.isfinite(float(v))


def _mean(values: Iterable[float | None]) -> float | None:
    vals = [float(v) for v in values if _finite(v)]
    return sum(vals) / len(vals) if vals else None


@lru_cache(maxsize=64)
def _t_quantile(dof: int) -> float:
    from scipy.stats import t

    return float(t.ppf(0.975, dof))


def t_interval(values: Sequence[float]) -> tuple[float, float | None, int]:
    """Mean, half-width of the Student-t 95% interval (None for fewer than 2 values), and n."""
    x = np.asarray([v for v in values if _finite(v)], dtype=float)
    if x.size == 0:
        raise ValueError("t_interval of no finite values")
    if x.size < 2:
        return float(x.mean()), None, 1
    half = _t_quantile(x.size - 1) * float(x.std(ddof=1)) / math.sqrt(x.size)
    return float(x.mean()), half, int(x.size)


def normalised_score(
    score: float | None,
    higher_is_better: bool,
    chance: float | None,
    status: str = "ok",
    vocab_size: int | None = None,
) -> float | None:
    """A result's score on [0, 1], 0 = chance, 1 = perfect (see the module docstring); None when undefined."""
    if status == "diverged":
        return 0.0
    if status != "ok" or not _finite(score):
        return None
    score = float(score)
    if higher_is_better:
        c = float(chance) if _finite(chance) else 0.0
        if c >= 1.0:
            return None
        value = (score - c) / (1.0 - c)
    else:
        c = float(chance) if _finite(chance) and float(chance) > 1.0 else float(vocab_size or 0)
        if c <= 1.0 or score <= 0.0:
            return None
        value = 1.0 - math.log(score) / math.log(c)
    return min(1.0, max(0.0, value))


# -- colours -----------------------------------------------------------------------------------------------------
def encoding_colors(names: Iterable[str]) -> dict[str, str]:
    """One colour per encoding (sorted names -> tab10, tab20, then evenly spaced hues), the same in every plot."""
    import matplotlib as mpl
    from matplotlib.colors import hsv_to_rgb, to_hex

    ordered = sorted(set(names))
    n = len(ordered)
    if n <= 10:
        colors = [to_hex(c) for c in mpl.colormaps["tab10"].colors[:n]]
    elif n <= 20:  # tab10, then the darker tones of tab20b and tab20c (the light tab20 tones read badly as text)
        extra = [mpl.colormaps["tab20b"].colors[i] for i in (0, 4, 8, 12, 16)]
        extra += [mpl.colormaps["tab20c"].colors[i] for i in (0, 4, 8, 12, 16)]
        colors = [to_hex(c) for c in (list(mpl.colormaps["tab10"].colors) + extra)[:n]]
    else:
        colors = [to_hex(hsv_to_rgb((i / n, 0.65, 0.8 if i % 2 else 0.62))) for i in range(n)]
    return dict(zip(ordered, colors, strict=True))


@lru_cache(maxsize=4)
def _lut(cmap: str) -> np.ndarray:
    import matplotlib as mpl

    return mpl.colormaps[cmap].resampled(256)(np.arange(256))[:, :3]


def _cmap_hex(value: float | None, cmap: str = "viridis") -> tuple[str, str]:
    """Background and readable text colour of ``value`` in [0, 1] (light grey for missing)."""
    if value is None:
        return "#eeeeee", "#777777"
    r, g, b = _lut(cmap)[int(round(min(1.0, max(0.0, value)) * 255))]
    luminance = 0.299 * r + 0.587 * g + 0.114 * b
    hex_ = "#{:02x}{:02x}{:02x}".format(*(int(round(255 * c)) for c in (r, g, b)))
    return hex_, "#000000" if luminance > 0.5 else "#ffffff"


# -- view models -------------------------------------------------------------------------------------------------
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

    @property
    def partial(self) -> bool:
        return self.n_tasks < self.total_tasks


@dataclass
class RenderInfo:
    """What :func:`render_report` wrote."""

    path: Path
    size_bytes: int
    seconds: float
    n_results: int
    runs: list[int]


# -- selection ---------------------------------------------------------------------------------------------------
def _check_run(run: int | str | None) -> int | str:
    if run is None:
        return "latest"
    if isinstance(run, int) and not isinstance(run, bool):
        return run
    text = str(run).strip()
    if text in ("latest", "previous", "all"):
        return text
    try:
        return int(text)
    except ValueError:
        raise ReportError(f"--run {run!r} is not valid; expected {RUN_CHOICES}") from None


def select(df: pd.DataFrame, run_ids: list[int], run: int | str) -> tuple[pd.DataFrame, list[int]]:
    """The rows to show and the run ids they come from. ``all``: the latest result of every (encoding, task,
    train length, eval length, seed) across runs; otherwise the rows of the one resolved run."""
    if run == "all":
        if df.empty:
            return df, []
        key = ["encoding", "task", "train_length", "eval_length", "seed"]
        sel = df.sort_values("id").drop_duplicates(key, keep="last")
        return sel, sorted(int(r) for r in sel["run_id"].unique())
    return df[df["run_id"].isin(run_ids)], run_ids


def previous_comparable(df: pd.DataFrame, sel: pd.DataFrame) -> pd.DataFrame:
    """For each config hash in ``sel``, the rows of the latest earlier run that holds that config hash."""
    if sel.empty:
        return sel
    first = int(sel["run_id"].min())
    earlier = df[(df["run_id"] < first) & df["config_hash"].isin(set(sel["config_hash"]))]
    if earlier.empty:
        return earlier
    latest = earlier.groupby("config_hash")["run_id"].transform("max")
    return earlier[earlier["run_id"] == latest]


# -- assembly ----------------------------------------------------------------------------------------------------
def _split_score(split_metrics: Mapping[str, Any], metric: str) -> float | None:
    from pebench.tasks.base import METRICS

    value = split_metrics.get(METRICS.get(metric, "token_accuracy"))
    return float(value) if _finite(value) else None


def _display(value: float | None, higher_is_better: bool) -> float | None:
    """Metric value in display units: accuracy in percent, perplexity as is."""
    if value is None:
        return None
    return 100.0 * value if higher_is_better else value


class _Group:
    """The results of one (task, encoding): per eval length, per seed, the row as a dict."""

    def __init__(self) -> None:
        self.by_length: dict[int, dict[int, dict[str, Any]]] = defaultdict(dict)

    def seeds(self) -> list[int]:
        return sorted({s for per_seed in self.by_length.values() for s in per_seed})


def _per_seed_norm(group: _Group, lengths: Iterable[int]) -> dict[int, float]:
    """Seed -> mean normalised score over ``lengths`` (seeds with no defined score are left out)."""
    lengths = list(lengths)
    out: dict[int, float] = {}
    for seed in group.seeds():
        m = _mean(group.by_length[L][seed]["norm"] for L in lengths if seed in group.by_length[L])
        if m is not None:
            out[seed] = m
    return out


def _per_seed_metric(group: _Group, lengths: Iterable[int], hib: bool) -> dict[int, float]:
    lengths = list(lengths)
    out: dict[int, float] = {}
    for seed in group.seeds():
        m = _mean(group.by_length[L][seed]["score"] for L in lengths if seed in group.by_length[L])
        if m is not None:
            out[seed] = _display(m, hib)  # type: ignore[assignment]
    return out


def _gap_per_seed(group: _Group, id_lengths: list[int], ood_lengths: list[int], hib: bool) -> dict[int, float]:
    ids = _per_seed_metric(group, id_lengths, hib)
    oods = _per_seed_metric(group, ood_lengths, hib)
    return {s: (ids[s] - oods[s]) if hib else (oods[s] - ids[s]) for s in ids if s in oods}


def _cell(values: Mapping[int, float] | Sequence[float], digits: int) -> Cell:
    vals = list(values.values()) if isinstance(values, Mapping) else list(values)
    vals = [v for v in vals if _finite(v)]
    if not vals:
        return Cell(digits=digits)
    mean, half, n = t_interval(vals)
    return Cell(value=mean, half=half, n=n, digits=digits)


def _rows_by_task(df: pd.DataFrame) -> dict[tuple[str, int], dict[str, _Group]]:
    groups: dict[tuple[str, int], dict[str, _Group]] = defaultdict(lambda: defaultdict(_Group))
    for rec in df.to_dict("records"):
        groups[(rec["task"], int(rec["train_length"]))][rec["encoding"]].by_length[int(rec["eval_length"])][
            int(rec["seed"])
        ] = rec
    return groups


def _prepare(df: pd.DataFrame) -> pd.DataFrame:
    """Adds ``norm`` (the normalised score) to a results frame."""
    df = df.copy()
    norms = []
    for status, score, hib, chance, config in zip(
        df["status"], df["score"], df["higher_is_better"], df["chance_level"], df["config"], strict=True
    ):
        vocab = None
        if isinstance(config, Mapping):
            vocab = (config.get("model") or {}).get("vocab_size")
        norms.append(normalised_score(score, bool(hib), chance, str(status), vocab))
    df["norm"] = norms
    return df


def _task_keys(groups: Mapping[tuple[str, int], Any]) -> dict[tuple[str, int], tuple[str, str]]:
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


def _config_text(rec: Mapping[str, Any]) -> str:
    cfg = rec.get("config") or {}
    model = cfg.get("model") or {}
    train = cfg.get("train") or {}
    parts = []
    if train.get("steps") is not None:
        parts.append(f"{train['steps']} steps, batch {train.get('batch_size', '?')}, lr {train.get('lr', '?')}")
    if model:
        layers, heads = model.get("n_layers", "?"), model.get("n_heads", "?")
        parts.append(f"d_model {model.get('d_model', '?')}, {layers} layers, {heads} heads")
    task_opts = (cfg.get("task") or {}).get("options")
    if task_opts:
        parts.append("task options " + ", ".join(f"{k}={v}" for k, v in sorted(task_opts.items())))
    return " · ".join(parts)


@dataclass
class Assembled:
    tasks: list[TaskView]
    entries: list[Entry]
    colors: dict[str, str]
    markers: dict[str, str]
    heat: dict[str, dict[str, dict[str, float | None]]]
    has_deltas: bool


def assemble(sel: pd.DataFrame, prev: pd.DataFrame) -> Assembled:
    """Per-task tables and the leaderboard from the selected rows (and the previous comparable rows)."""
    sel = _prepare(sel)
    prev = _prepare(prev) if not prev.empty else prev
    groups = _rows_by_task(sel)
    prev_groups = _rows_by_task(prev) if not prev.empty else {}
    encodings = sorted(set(sel["encoding"]))
    colors = encoding_colors(encodings)
    markers = {e: MARKER_SHAPES[i % len(MARKER_SHAPES)] for i, e in enumerate(encodings)}
    keys = _task_keys(groups)
    total_tasks = len(groups)

    # per (encoding, task): seed -> normalised ID / OOD score, for the leaderboard and the heatmap
    id_norm: dict[str, dict[str, dict[int, float]]] = defaultdict(dict)
    ood_norm: dict[str, dict[str, dict[int, float]]] = defaultdict(dict)
    prev_id: dict[str, dict[str, float]] = defaultdict(dict)
    prev_ood: dict[str, dict[str, float]] = defaultdict(dict)
    failures: dict[str, int] = defaultdict(int)
    seeds_of: dict[str, set[int]] = defaultdict(set)
    task_views: list[TaskView] = []
    has_deltas = False

    for tk in sorted(groups):
        task_name, train_length = tk
        key, label = keys[tk]
        enc_groups = groups[tk]
        any_rec = next(iter(next(iter(enc_groups.values())).by_length.values()))
        first = next(iter(any_rec.values()))
        hib = bool(first["higher_is_better"])
        metric = str(first["metric"] or ("accuracy" if hib else "perplexity"))
        chance = float(first["chance_level"]) if _finite(first["chance_level"]) else None
        digits = 1 if hib else 2
        lengths = sorted({L for g in enc_groups.values() for L in g.by_length})
        id_lengths = [L for L in lengths if train_length >= L]
        ood_lengths = [L for L in lengths if train_length < L]
        best_dir = max if hib else min
        rows: list[TaskRow] = []
        for enc in sorted(enc_groups):
            g = enc_groups[enc]
            pg = prev_groups.get(tk, {}).get(enc)
            seeds = g.seeds()
            seeds_of[enc].update(seeds)
            n_fail = sum(1 for per in g.by_length.values() for r in per.values() if r["status"] != "ok")
            failures[enc] += n_fail
            cells = []
            for L in lengths:
                per = g.by_length.get(L, {})
                c = _cell([_display(r["score"], hib) for r in per.values() if r["status"] == "ok"], digits)
                bad = [r["status"] for r in per.values() if r["status"] != "ok"]
                if bad:
                    c.note = ", ".join(f"{bad.count(s)} {s}" for s in sorted(set(bad)))
                if pg is not None and L in pg.by_length:
                    pm = _mean(
                        _display(r["score"], hib) for r in pg.by_length[L].values() if r["status"] == "ok"
                    )
                    if pm is not None and c.value is not None:
                        c.delta = c.value - pm
                        c.delta_good = (c.delta > 0) == hib
                        has_deltas = True
                cells.append(c)
            id_cell = _cell(_per_seed_metric(g, id_lengths, hib), digits)
            gap = _cell(_gap_per_seed(g, id_lengths, ood_lengths, hib), digits)
            i_norm = _per_seed_norm(g, id_lengths)
            o_norm = _per_seed_norm(g, ood_lengths)
            if pg is not None:
                p_id = _mean(_per_seed_metric(pg, id_lengths, hib).values())
                if p_id is not None and id_cell.value is not None:
                    id_cell.delta = id_cell.value - p_id
                    id_cell.delta_good = (id_cell.delta > 0) == hib
                p_gap = _mean(_gap_per_seed(pg, id_lengths, ood_lengths, hib).values())
                if p_gap is not None and gap.value is not None:
                    gap.delta = gap.value - p_gap
                    gap.delta_good = gap.delta < 0
                pi = _mean(_per_seed_norm(pg, id_lengths).values())
                po = _mean(_per_seed_norm(pg, ood_lengths).values())
                if pi is not None:
                    prev_id[enc][key] = pi
                if po is not None:
                    prev_ood[enc][key] = po
            if i_norm:
                id_norm[enc][key] = i_norm
            if o_norm:
                ood_norm[enc][key] = o_norm
            rows.append(
                TaskRow(
                    encoding=enc,
                    color=colors[enc],
                    marker=markers[enc],
                    id_cell=id_cell,
                    cells=cells,
                    gap=gap,
                    ood_norm=_cell(o_norm, 2),
                    n_seeds=len(seeds),
                    failures=n_fail,
                )
            )
        # best per column (the gap only among encodings that learned the task: ID normalised score >= 0.5)
        for col in range(len(lengths)):
            _mark_best([r.cells[col] for r in rows], best_dir)
        _mark_best([r.id_cell for r in rows], best_dir)
        learned = [
            r for r in rows if (_mean(id_norm[r.encoding].get(key, {}).values()) or 0.0) >= 0.5
        ]  # fmt: skip
        _mark_best([r.gap for r in learned], min)
        _mark_best([r.ood_norm for r in rows], max)
        # rows best first: by OOD normalised score, then ID score, then name
        rows.sort(key=lambda r: (r.ood_norm.value is None, -(r.ood_norm.value or 0.0),
                                 -(_mean(id_norm[r.encoding].get(key, {}).values()) or 0.0), r.encoding))  # fmt: skip
        task_views.append(
            TaskView(
                key=key,
                name=task_name,
                label=label,
                anchor="task-" + "".join(ch if ch.isalnum() else "-" for ch in key),
                metric=metric,
                higher_is_better=hib,
                chance=chance,
                train_length=train_length,
                lengths=lengths,
                rows=rows,
                config_text=_config_text(first),
                unit=f"{metric.replace('_', ' ')} %" if hib else metric,
                show_id=len(id_lengths) > 1,
            )
        )

    entries = []
    for enc in encodings:
        n_tasks = sum(1 for tk in groups if enc in groups[tk])
        entry = Entry(
            encoding=enc,
            color=colors[enc],
            id=_aggregate(id_norm.get(enc, {})),
            ood=_aggregate(ood_norm.get(enc, {})),
            n_tasks=n_tasks,
            total_tasks=total_tasks,
            n_seeds=len(seeds_of[enc]),
            failures=failures[enc],
        )
        for cell, cur, old in ((entry.id, id_norm.get(enc, {}), prev_id.get(enc, {})),
                               (entry.ood, ood_norm.get(enc, {}), prev_ood.get(enc, {}))):  # fmt: skip
            common = [k for k in cur if k in old]
            if common and cell.value is not None:
                cell.delta = sum(_mean(cur[k].values()) - old[k] for k in common) / len(common)  # type: ignore[operator]
                cell.delta_good = cell.delta > 0
        entries.append(entry)
    entries.sort(key=lambda e: (e.ood.value is None, -(e.ood.value or 0.0), -(e.id.value or 0.0), e.encoding))
    for i, e in enumerate(entries, 1):
        e.rank = i
    for attr in ("id", "ood"):
        _mark_best([getattr(e, attr) for e in entries], max)

    heat = {
        "ood": {e: {k: _mean(v.values()) for k, v in ood_norm.get(e, {}).items()} for e in encodings},
        "id": {e: {k: _mean(v.values()) for k, v in id_norm.get(e, {}).items()} for e in encodings},
    }
    _split_grids(task_views, groups, keys)
    return Assembled(task_views, entries, colors, markers, heat, has_deltas)


def _mark_best(cells: Sequence[Cell], direction: Callable[[Iterable[float]], float]) -> None:
    """Highlight every cell whose value, as displayed, equals the best displayed value (ties all highlighted)."""
    shown = [round(c.value, c.digits) for c in cells if c.value is not None]
    if not shown:
        return
    best = direction(shown)
    for c in cells:
        c.best = c.value is not None and round(c.value, c.digits) == best


def _aggregate(per_task: Mapping[str, Mapping[int, float]]) -> Cell:
    """Per seed: mean over the tasks that have the seed; then mean over seeds with a BCa bootstrap interval."""
    from pebench.stats import estimate

    by_seed: dict[int, list[float]] = defaultdict(list)
    for per_seed in per_task.values():
        for seed, v in per_seed.items():
            by_seed[seed].append(v)
    values = [sum(v) / len(v) for _, v in sorted(by_seed.items())]
    if not values:
        return Cell(digits=3)
    est = estimate(values)
    half = None
    if est.n > 1:
        half = max(est.mean - est.low, est.high - est.mean)
    cell = Cell(value=est.mean, half=half, n=est.n, digits=3)
    if est.n > 1:
        cell.tip = f"mean over {est.n} seeds, 95% BCa bootstrap interval [{est.low:.3f}, {est.high:.3f}]"
    return cell


def _split_grids(
    views: list[TaskView], groups: Mapping[tuple[str, int], Mapping[str, _Group]], keys: Mapping[tuple[str, int], Any]
) -> None:
    """For tasks evaluated on several splits (e.g. one per passkey depth): split x length grid per encoding."""
    by_key = {keys[tk][0]: tk for tk in groups}
    for view in views:
        enc_groups = groups[by_key[view.key]]
        splits: list[str] = []
        for g in enc_groups.values():
            for per in g.by_length.values():
                for r in per.values():
                    for s in ((r.get("metrics") or {}).get("splits") or {}):
                        if s not in splits:
                            splits.append(s)
        if len(splits) < 2:
            continue
        view.splits = splits
        for row in view.rows:
            g = enc_groups[row.encoding]
            grid = []
            for s in splits:
                line = []
                for L in view.lengths:
                    vals = [
                        _split_score(((r.get("metrics") or {}).get("splits") or {}).get(s) or {}, view.metric)
                        for r in g.by_length.get(L, {}).values()
                        if r["status"] == "ok"
                    ]
                    m = _mean(vals)
                    norm = normalised_score(m, view.higher_is_better, view.chance) if m is not None else None
                    bg, fg = _cmap_hex(norm)
                    shown = _display(m, view.higher_is_better)
                    line.append({
                        "text": "–" if shown is None else f"{shown:.{1 if view.higher_is_better else 2}f}",
                        "bg": bg,
                        "fg": fg,
                    })  # fmt: skip
                grid.append({"split": s, "cells": line})
            view.split_grids.append({"encoding": row.encoding, "color": row.color, "rows": grid})


# -- plots -------------------------------------------------------------------------------------------------------
def length_plot(view: TaskView, markers: Mapping[str, str]) -> str:
    """Score vs evaluation length (log2 axis), one line per encoding, training length and chance marked."""
    from pebench import report_svg as svg

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
    from pebench import report_svg as svg

    keys = [t.key for t in assembled.tasks]
    panels = []
    for kind, title in (("ood", "OOD normalised score"), ("id", "ID normalised score")):
        panels.append((title, [[assembled.heat[kind].get(e, {}).get(k) for k in keys] for e in order]))
    return svg.heatmap([(e, assembled.colors[e]) for e in order], keys, panels, _cmap_hex)


def learning_curves(
    curves: Mapping[str, Mapping[str, list[tuple[int, float]]]],
    views: Sequence[TaskView],
    colors: Mapping[str, str],
    markers: Mapping[str, str],
) -> str:
    """Training loss vs step, one panel per task, one line per encoding (mean over seeds)."""
    from pebench import report_svg as svg

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


def _attention_matrices(att: Mapping[str, Any]) -> list[np.ndarray]:
    """The per-head (T, T) probability matrices of a stored snapshot (see
    :func:`pebench.runner.attention_snapshot`): rows of the causal lower triangle scaled by ``scale``."""
    scale = float(att.get("scale") or 1.0)
    out = []
    for head in att.get("heads") or []:
        t = len(head)
        m = np.zeros((t, t))
        for i, row in enumerate(head):
            m[i, : len(row)] = np.asarray(row[:t], dtype=float) / scale
        out.append(m)
    return out


def _attention(view: TaskView, groups: Mapping[str, _Group]) -> None:
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
        heads = _attention_matrices(att)
        if not heads:
            continue
        images = [{"label": f"head {i}", "src": _png_data_uri(h)} for i, h in enumerate(heads)]
        images.append({"label": "mean", "src": _png_data_uri(np.mean(heads, axis=0))})
        view.attention.append({
            "encoding": row.encoding, "color": row.color, "seed": seed, "layer": att.get("layer"),
            "tokens": len(att.get("tokens") or heads[0]), "images": images,
        })  # fmt: skip


def _curves(engine: Any, sel: pd.DataFrame, keys: Mapping[tuple[str, int], tuple[str, str]]) -> dict:
    """Task key -> encoding -> [(step, mean loss over seeds)] from one result per trained model."""
    from sqlalchemy import select as sa_select

    from pebench import db

    if sel.empty:
        return {}
    reps = sel.sort_values("id").drop_duplicates(["task", "train_length", "encoding", "seed", "config_hash"])
    owner = {int(r.id): (keys[(r.task, int(r.train_length))][0], r.encoding) for r in reps.itertuples()}
    points: dict[tuple[str, str], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    ids = sorted(owner)
    from sqlalchemy.orm import Session

    with Session(engine) as s:
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            q = sa_select(db.CurvePoint.result_id, db.CurvePoint.step, db.CurvePoint.loss).where(
                db.CurvePoint.result_id.in_(chunk)
            )
            for result_id, step, loss in s.execute(q):
                if _finite(loss):
                    points[owner[result_id]][int(step)].append(float(loss))
    out: dict[str, dict[str, list[tuple[int, float]]]] = defaultdict(dict)
    for (key, enc), by_step in points.items():
        out[key][enc] = [(step, sum(v) / len(v)) for step, v in sorted(by_step.items())]
    return out


# -- header ------------------------------------------------------------------------------------------------------
def _joined(values: Iterable[Any]) -> str:
    seen: list[str] = []
    for v in values:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            continue
        text = str(v)
        if text and text not in seen:
            seen.append(text)
    return ", ".join(seen) if seen else "unknown"


def _fmt_duration(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds):
        return "–"
    seconds = float(seconds)
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.2f} h"


def header_info(sel: pd.DataFrame, runs: Sequence[Mapping[str, Any]], mode: str) -> dict[str, Any]:
    """Provenance and size of what the page shows."""
    commits = []
    for r in runs:
        c = r.get("git_commit")
        if c:
            commits.append(f"{c[:10]}{' (dirty)' if r.get('git_dirty') else ''}")
    model_key = ["encoding", "task", "train_length", "seed", "config_hash"]
    trained = sel[~sel["model_reused"].astype(bool)].drop_duplicates(model_key) if not sel.empty else sel
    models = sel.drop_duplicates(model_key) if not sel.empty else sel
    statuses = sel["status"].value_counts().to_dict() if not sel.empty else {}
    starts = [r["started_at"] for r in runs if r.get("started_at") is not None]
    ends = [r["finished_at"] for r in runs if r.get("finished_at") is not None]
    return {
        "mode": mode,
        "runs": [
            {"id": r["id"], "status": r.get("status"), "started": _fmt_time(r.get("started_at")),
             "command": r.get("command") or ""}
            for r in runs
        ],  # fmt: skip
        "date": _fmt_time(min(starts)) if starts else "–",
        "finished": _fmt_time(max(ends)) if ends else "–",
        "commit": ", ".join(dict.fromkeys(commits)) or "unknown",
        "device": _joined(r.get("device") for r in runs),
        "host": _joined(r.get("host") for r in runs),
        "versions": (
            f"pebench {_joined(r.get('package_version') for r in runs)} · torch "
            f"{_joined(r.get('torch_version') for r in runs)} · Python {_joined(r.get('python_version') for r in runs)}"
        ),
        "tier": _joined(r.get("tier") for r in runs),
        "n_cases": int(len(sel)),
        "statuses": ", ".join(f"{n} {s}" for s, n in sorted(statuses.items())),
        "n_models": int(len(models)),
        "n_trained": int(len(trained)),
        "train_time": _fmt_duration(float(trained["train_time_s"].fillna(0).sum()) if len(trained) else 0.0),
        "all_train_time": _fmt_duration(float(models["train_time_s"].fillna(0).sum()) if len(models) else 0.0),
        "n_encodings": int(sel["encoding"].nunique()) if not sel.empty else 0,
        "n_tasks": int(sel.groupby(["task", "train_length"]).ngroups) if not sel.empty else 0,
        "n_seeds": int(sel["seed"].nunique()) if not sel.empty else 0,
        "n_configs": int(sel.groupby(["encoding", "task"])["config_hash"].nunique().max()) if not sel.empty else 0,
    }


def _fmt_time(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, pd.Timestamp):
        value = value.to_pydatetime()
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M UTC")
    return str(value)


def _runs(engine: Any) -> list[dict[str, Any]]:
    from sqlalchemy import select as sa_select
    from sqlalchemy.orm import Session

    from pebench import db

    with Session(engine) as s:
        return [
            {c.name: getattr(run, c.name) for c in db.Run.__table__.columns}
            for run in s.scalars(sa_select(db.Run).order_by(db.Run.id))
        ]


def _failures(sel: pd.DataFrame) -> tuple[list[dict[str, Any]], int]:
    bad = sel[sel["status"] != "ok"] if not sel.empty else sel
    rows = [
        {"case_id": r["case_id"], "seed": int(r["seed"]), "status": r["status"], "message": r["message"] or ""}
        for r in bad.head(MAX_FAILURES_SHOWN).to_dict("records")
    ]
    return rows, int(len(bad))


# -- rendering ---------------------------------------------------------------------------------------------------
def _environment() -> Any:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(Path(__file__).with_name("report_templates"))),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env


LIGHT_COLUMNS = tuple(c for c in ("id", "run_id", "case_id", "encoding", "task", "train_length", "eval_length",
                                  "seed", "config_hash", "status", "message", "metric", "higher_is_better", "score",
                                  "chance_level", "train_time_s", "model_reused"))  # fmt: skip


def load_light(engine: Any) -> pd.DataFrame:
    """Every result without its JSON columns (config, metrics): enough to select runs and compute deltas.

    :func:`pebench.results.load` decodes every JSON column of every run; here those are read only for the rows
    shown (:func:`attach_json`), which keeps a 10,000-result page well inside its time budget."""
    from sqlalchemy import select as sa_select

    from pebench import db

    cols = [getattr(db.Result, c) for c in LIGHT_COLUMNS]
    with engine.connect() as conn:
        rows = conn.execute(sa_select(*cols).order_by(db.Result.id)).all()
    return pd.DataFrame([tuple(r) for r in rows], columns=list(LIGHT_COLUMNS))


def attach_json(engine: Any, sel: pd.DataFrame) -> pd.DataFrame:
    """``sel`` with its ``config`` and ``metrics`` columns read from the database."""
    from sqlalchemy import select as sa_select

    from pebench import db

    ids = [int(i) for i in sel["id"]]
    found: dict[int, tuple[Any, Any]] = {}
    with engine.connect() as conn:
        for i in range(0, len(ids), 500):
            q = sa_select(db.Result.id, db.Result.config, db.Result.metrics).where(db.Result.id.in_(ids[i : i + 500]))
            for rid, config, metrics in conn.execute(q):
                found[int(rid)] = (config or {}, metrics or {})
    sel = sel.copy()
    sel["config"] = [found.get(i, ({}, {}))[0] for i in ids]
    sel["metrics"] = [found.get(i, ({}, {}))[1] for i in ids]
    return sel


def build_context(db_url: str, run: int | str | None = "latest") -> dict[str, Any]:
    """Everything the template needs, from the database at ``db_url``."""
    from markupsafe import Markup

    from pebench import db

    choice = _check_run(run)
    engine = db.open_db(db_url, create=False)
    try:
        db.Base.metadata.create_all(engine)  # an empty file gains the tables (as in pebench.results.load)
        df = load_light(engine)
        runs = _runs(engine)
        run_ids: list[int] = []
        if choice != "all" and (runs or choice not in ("latest", "previous")):
            run_ids = [db.resolve_run_id(engine, choice)]
        sel, shown_runs = select(df, run_ids, choice)
        if choice != "all":
            shown_runs = run_ids
        run_rows = [r for r in runs if r["id"] in set(shown_runs)]
        mode = "all runs (latest result of each case)" if choice == "all" else "one run"
        context: dict[str, Any] = {
            "title": "pebench leaderboard",
            "generated": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "db_url": _safe_url(db_url),
            "header": header_info(sel, run_rows, mode),
            "empty": sel.empty,
            "n_runs_in_db": len(runs),
        }
        if sel.empty:
            return context
        sel = attach_json(engine, sel)
        prev = previous_comparable(df, sel) if choice != "all" else sel.iloc[0:0]
        configs = dict(zip(sel["config_hash"], sel["config"], strict=True))
        prev = prev.assign(config=[configs.get(h, {}) for h in prev["config_hash"]], metrics=[{}] * len(prev))
        assembled = assemble(sel, prev)
        groups = _rows_by_task(sel)
        keys = _task_keys(groups)
        by_key = {keys[tk][0]: tk for tk in groups}
        for view in assembled.tasks:
            view.plot_svg = Markup(length_plot(view, assembled.markers))
            _attention(view, groups[by_key[view.key]])
        order = [e.encoding for e in assembled.entries]
        failures, n_failures = _failures(sel)
        curves = _curves(engine, sel, keys)
        context.update(
            tasks=assembled.tasks,
            entries=assembled.entries,
            colors=assembled.colors,
            heatmap_svg=Markup(heatmap(assembled, order)),
            curves_svg=Markup(learning_curves(curves, assembled.tasks, assembled.colors, assembled.markers)),
            has_deltas=assembled.has_deltas,
            previous_runs=sorted(int(r) for r in prev["run_id"].unique()) if not prev.empty else [],
            failures=failures,
            n_failures=n_failures,
            max_failures=MAX_FAILURES_SHOWN,
            superseded=int(len(df) - len(sel)) if choice == "all" else 0,
            any_partial=any(e.partial for e in assembled.entries),
        )
        return context
    finally:
        engine.dispose()


def _safe_url(url: str) -> str:
    """The database URL without a password."""
    try:
        from sqlalchemy.engine import make_url

        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return url


def render_html(context: Mapping[str, Any]) -> str:
    """The page for ``context`` (see :func:`build_context`)."""
    return _environment().get_template("leaderboard.html").render(**context)


def render_report(db_url: str, output: str | os.PathLike[str], run: int | str | None = "latest") -> RenderInfo:
    """Render the leaderboard of ``run`` (an id, ``latest``, ``previous`` or ``all``) in ``db_url`` to ``output``.

    The file is written to a temporary name beside ``output`` and renamed, so a failure never leaves half a page.
    """
    start = time.perf_counter()
    out = Path(output).expanduser()
    if out.is_dir():
        raise ReportError(f"-o {str(output)!r} is a directory; give a file name such as leaderboard.html")
    if not out.parent.resolve().is_dir():
        raise ReportError(f"-o {str(output)!r}: directory {out.parent.resolve()} does not exist")
    try:
        context = build_context(db_url, run)
    except DatabaseError:
        raise
    html = render_html(context)
    tmp = out.with_name(f".{out.name}.tmp{os.getpid()}")
    tmp.write_text(html, encoding="utf-8")
    os.replace(tmp, out)
    runs = [r["id"] for r in context["header"]["runs"]]
    return RenderInfo(out, out.stat().st_size, time.perf_counter() - start, context["header"]["n_cases"], runs)
