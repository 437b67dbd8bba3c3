"""The suite's closing summary in the terminal: per task, encodings x evaluated lengths in the task's own metric,
in-distribution lengths (up to the training length) left of ``|`` and longer ones right of it, the chance level, and
the best score of each column marked ``*`` only when it beats every other encoding beyond the noise
(:mod:`pebench.analysis.noise`: intervals that separate with several seeds, more than the task's measured seed spread
with one); otherwise nothing is marked. The last column, *how far*, is the longest length up to which the encoding
keeps 90% of its normalised score at the training length, as a multiple of it (:mod:`pebench.analysis.reach`; ``–``:
not learned).

Several seeds are averaged (the mean over the seeds' ``ok`` results); a case without a score shows its status.

A learning-rate sweep (the default protocol, :mod:`pebench.analysis.lr`) shows one table per task with each
(encoding, seed) at its chosen rate, and the rates chosen under it; its single-seed marks need the seed spread
measured at that protocol (:func:`pebench.analysis.noise.protocol_hash` with the grid), else none.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable

from pebench import metrics
from pebench.analysis import lr as rate_axes
from pebench.analysis import noise, reach, scoring
from pebench.analysis.lr import rate_at
from pebench.analysis.mechanisms import moved
from pebench.case import Point, by_point
from pebench.records.record import ResultRecord
from pebench.status import ResultStatus


def case_score(record: ResultRecord) -> str:
    """``accuracy 97.3%`` / ``perplexity 3.41``: a case's score for its line under ``-v``."""
    m = metrics.of_result(record.metric, record.higher_is_better)
    value = m.display(record.score)
    return f"{m.label} {value:.{m.digits}f}{'%' if m.percent else ''}" if value is not None else record.status


def _norm(r: ResultRecord, m: metrics.Metric) -> float | None:
    vocab = ((r.config or {}).get("model") or {}).get("vocab_size")
    return scoring.normalised(r.score, m, r.chance_level, r.status, vocab)


def score_tables(records: Iterable[ResultRecord], lr_rates: str | None = None) -> list[str]:
    """The lines of one table per (task, training length, sweep point) of ``records``; with ``lr_rates`` (the rates
    of a learning-rate sweep, ``records`` already at each cell's chosen rate, :func:`pebench.analysis.lr.
    chosen_records`) one table per (task, training length) and a line of the rates chosen."""
    per_task: dict[tuple[str, int], list[ResultRecord]] = defaultdict(list)
    for r in records:
        per_task[(r.task, r.train_length)].append(r)
    if lr_rates is not None:
        by_task = {(task, train_length, ""): recs for (task, train_length), recs in per_task.items()}
    else:
        by_task = {(task, train_length, point): recs for (task, train_length), all_recs in per_task.items()
                   for point, recs in by_point(all_recs, lambda r: r.point).items()}  # fmt: skip
    lines: list[str] = []
    for (task, train_length, point), recs in sorted(by_task.items()):
        m = metrics.of_result(recs[0].metric, recs[0].higher_is_better)
        chance = recs[0].chance_level
        lengths = sorted({r.eval_length for r in recs})
        ids, oods = scoring.split_lengths(lengths, train_length)
        encodings = sorted({r.encoding for r in recs})
        cells: dict[tuple[str, int], float | None] = {}
        notes: dict[tuple[str, int], str] = {}
        for enc in encodings:
            for L in lengths:
                mine = [r for r in recs if r.encoding == enc and r.eval_length == L]
                cells[(enc, L)] = m.display(scoring.mean(r.score for r in mine if r.status == ResultStatus.OK))
                notes[(enc, L)] = ",".join(sorted({r.status for r in mine if r.status != ResultStatus.OK})) or "-"
        best = {}
        sigma = noise.task_sigma(task, recs[0].config, lr_grid=lr_rates)
        for L in lengths:
            samples = [[_norm(r, m) for r in recs if r.encoding == e and r.eval_length == L] for e in encodings]
            flags = noise.marked_best(samples, sigma)
            shown = scoring.best_of([cells[(e, L)] for e in encodings], m.digits, max if m.higher_is_better else min)
            # within the noise, or tied at the shown precision: nothing marked
            best[L] = encodings[flags.index(True)] if any(flags) and sum(shown) == 1 else None
        chance_text = "" if chance is None else f", chance {m.display(chance):.3g}{'%' if m.percent else ''}"
        direction = "higher" if m.higher_is_better else "lower"
        # a second phase's axis is named under a learning-rate protocol too (each cell at its chosen rate)
        phase = sorted({f"{n}{v}" for r in recs for n, v in r.axes if n in rate_axes.SECOND_PHASE})
        at = f", at {point or '/'.join(phase)}" if point or phase else ""
        lines.append(f"{task} (train length {train_length}{at}): {m.unit}, {direction} is better{chance_text}")
        if lr_rates is not None:
            chosen = defaultdict(list)
            for r in sorted({(r.encoding, r.seed, r.point, Point.of_stored(r.axes)) for r in recs}):
                rate = rate_at(r[3])
                chosen[r[0]].append("-" if rate is None else f"{rate:g}")
            lines.append(f"  each at its best rate of {lr_rates} (per seed): "
                         + ", ".join(f"{e} {' '.join(v)}" for e, v in sorted(chosen.items())))

        far = {e: reach.reach({L: [_norm(r, m) for r in recs if r.encoding == e and r.eval_length == L]
                               for L in lengths}, train_length).text for e in encodings}  # fmt: skip
        text = {
            (e, L): (notes[(e, L)] if cells[(e, L)] is None else f"{cells[(e, L)]:.{m.digits}f}")
            + ("*" if best[L] == e else "")
            for e in encodings
            for L in lengths
        }
        width = max(len(e) for e in [*encodings, "encoding"])
        col = max(7, *(len(t) for t in text.values()))
        rows = [("encoding", {L: str(L) for L in lengths}, "how far")]
        rows += [(e, {L: text[(e, L)] for L in lengths}, far[e]) for e in encodings]
        for name, values, how_far in rows:
            line = f"  {name:<{width}}  " + " ".join(f"{values[L]:>{col}}" for L in ids) + " |"
            lines.append(line + "".join(f" {values[L]:>{col}}" for L in oods) + f"  {how_far:>7}")
    return lines


def lite_lines(records: Iterable[ResultRecord]) -> list[str]:
    """``--tier lite``: per encoding, its full OOD score and rank predicted from its lite tasks' results
    (:func:`pebench.analysis.lite.predict`; ``records`` at each cell's chosen rate), marked as predicted, with the
    90% interval of the map's error and the run's seed noise for the seeds it ran (issue 90)."""
    from pebench.analysis import lite

    shipped = lite.load()
    by_cell: dict[tuple[str, str], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    trained: dict[str, int] = {}
    evaluated: dict[str, set[int]] = defaultdict(set)
    for r in records:
        trained[r.task] = r.train_length
        evaluated[r.task].add(r.eval_length)
        m = metrics.of_result(r.metric, r.higher_is_better)
        if r.eval_length > r.train_length and (v := _norm(r, m)) is not None:
            by_cell[(r.encoding, r.task)][r.seed].append(v)
    check = shipped["validation"]
    covered = "" if check.get("coverage_single_seed") is None else \
        f"; its interval held {check['coverage_single_seed']:.0%} of held-out single-seed runs"  # fmt: skip
    lines = [f"lite tier: {', '.join(shipped['tasks'])} predict the full tier's aggregate (validated on the reference: "
             f"Kendall's tau {check['tau']:.2f}{covered}; studies/lite/README.md)"]  # fmt: skip
    if trained:
        cells = [f"{t} (trained at {n}, evaluated at {', '.join(map(str, sorted(evaluated[t])))})"
                 for t, n in trained.items()]  # fmt: skip
        lines.append("  cells run: " + "; ".join(cells))
    for enc in sorted({e for e, _ in by_cell}):
        per_task = {t: sum(sum(v) / len(v) for v in seeds.values()) / len(seeds)
                    for (e, t), seeds in by_cell.items() if e == enc}  # fmt: skip
        n_seeds = {t: len(by_seed) for (e, t), by_seed in by_cell.items() if e == enc}
        found = lite.predict(per_task, shipped, exclude=enc, seeds=n_seeds)
        lines.append(f"  {enc}: " + (found.text() + " (predicted, not measured: --tier quick measures it)"
                                      if found else "not every lite task has an OOD score: no prediction"))  # fmt: skip
    return lines


def lengths_text(values: list[int]) -> str:
    """``[1, 2, 3, 5, 8, 9]`` -> ``"[1-3, 5, 8, 9]"`` (runs of three or more consecutive integers collapsed)."""
    parts: list[str] = []
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        if j - i >= 2:
            parts.append(f"{values[i]}-{values[j]}")
        else:
            parts.extend(str(v) for v in values[i : j + 1])
        i = j + 1
    return "[" + ", ".join(parts) + "]"


WHY = (("local_mass", "local"), ("attn_entropy", "entropy"), ("sink_mass", "sink"), ("position_probe", "probe R²"),
       ("logit_range_ratio", "logits"))  # fmt: skip
"""The diagnostics of :func:`why_lines`, each with its short name (docs/diagnostics.md)."""


def why_lines(records: Iterable[ResultRecord]) -> list[str]:
    """Per (task, training length, sweep point), one line per encoding: each stored diagnostic (issue 89) from the
    training length to the longest evaluated length (the mean over seeds), the one that moved most
    (:func:`pebench.analysis.mechanisms.moved`) first and marked ``*``; nothing when no result stores them
    (``--no-diagnostics``)."""
    values: dict[tuple[str, int, str], dict[str, dict[str, dict[int, list[float]]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(lambda: defaultdict(list))))
    for r in records:
        for name, _ in WHY:
            value = (r.metrics or {}).get(name) if r.status == ResultStatus.OK else None
            if isinstance(value, (int, float)) and math.isfinite(value):
                values[(r.task, r.train_length, r.point)][r.encoding][name][r.eval_length].append(float(value))
    lines: list[str] = []
    for (task, train_length, point), per_encoding in sorted(values.items()):
        longest = max(n for enc in per_encoding.values() for d in enc.values() for n in d)
        if longest <= train_length:
            continue
        at = f", at {point}" if point else ""
        lines.append(f"why ({task}{at}): the diagnostics from the training length {train_length} to {longest}, the one "
                     "that moved most first (*; docs/diagnostics.md)")  # fmt: skip
        width = max(map(len, per_encoding))
        for enc, found in sorted(per_encoding.items()):
            moves = []
            for name, short in WHY:
                ends = found.get(name, {})
                if train_length in ends and longest in ends:
                    a, b = (sum(ends[n]) / len(ends[n]) for n in (train_length, longest))
                    text = f"{short} x{b:.2f}" if name == "logit_range_ratio" else f"{short} {a:.2f}->{b:.2f}"
                    moves.append((moved(name, a, b, longest / train_length), text))
            moves.sort(key=lambda m: -m[0])
            if moves:
                lines.append(f"  {enc:<{width}}  " + "  ".join(t + ("*" if i == 0 else "") for i, (_, t)
                                                               in enumerate(moves)))  # fmt: skip
    return lines


def extension_lines(records: Iterable[ResultRecord]) -> list[str]:
    """The terminal's *Extension by fine-tuning* (issue 88): each method of a second phase (``--extend``,
    ``--scaffold``) with its normalised score at L, F*L and 2F*L (mean over tasks, then over seeds with a 95%
    interval), ranked at F*L, and its fine-tune's and base model's mean time; the page's section
    (:func:`pebench.report.extension.extension_view`) from the same numbers. Nothing for a run without one."""
    import pandas as pd

    from pebench.report.extension import extension_view

    rows = [{"encoding": r.encoding, "task": r.task, "seed": r.seed, "train_length": r.train_length,
             "eval_length": r.eval_length, "status": r.status, "score": r.score, "metric": r.metric,
             "higher_is_better": r.higher_is_better, "chance_level": r.chance_level, "config": r.config,
             "axes": r.axes, "point": r.point, "train_time_s": r.train_time_s, "metrics": r.metrics}
            for r in records if any(n in ("ext", "pose", "scaffold") for n, _ in r.axes)]  # fmt: skip
    view = extension_view(pd.DataFrame(rows), pd.DataFrame()) if rows else None
    if view is None:
        return []
    width = max(len(r["method"]) for r in view["rows"])
    lines = ["Extension by fine-tuning: normalised score (0 chance, 1 perfect), mean over tasks then seeds [95% "
             "interval], ranked at F*L; zero-shot beside it: pebench report --run all with from-scratch runs "
             "(docs/extension.md)"]
    for r in view["rows"]:
        lines.append(f"  {r['rank']:>2}. {r['method']:<{width}}  L {r['scores'][0]}  F*L {r['scores'][1]}  "
                     f"2F*L {r['scores'][2]}  fine-tune {r['tune_s']} s (base {r['base_s']} s)  "
                     f"{r['n_tasks']} task{'s' if r['n_tasks'] != 1 else ''}")  # fmt: skip
    return lines
