"""The learning-rate study (issue 30, item 4): do the verdicts change when each encoding trains at its best rate?

    python studies/lr_sweep/verdicts.py DB [DB ...] [--base-lr 3e-3]

(each DB a SQLite file's path or a database URL; a comma-separated list counts as several)

Reads every ``--lr-sweep`` run of a database (shards, merged files and several sessions' runs together; a later
result of the same case and seed replaces an earlier one) and compares, per (task, encoding), two sides:

- **one rate**: the results at the shared default rate (``--base-lr``, 3e-3), the point ``lr0.003`` of the sweep, which
  is the model a run without ``--lr-sweep`` trains;
- **best rate**: each (encoding, task, seed) at the rate :func:`pebench.analysis.lr.chosen` picks, by the final
  validation at the training length only (the suite's own choice, never the out-of-distribution lengths).

Per cell the learned / partly / not-learned verdict of the mean normalised score over seeds at the training length
(:func:`pebench.analysis.scoring.learned_verdict`) and per evaluated length the marked winner
(:func:`pebench.analysis.noise.marked_best` with the task's measured spread), one rate vs best rate; the rates each
cell chose per seed; the training time of each side (the sum of the models' stored ``train_time_s``: the one-rate
side trains one model per cell and seed, the sweep every rate).

A database may also hold ``--lr-sweep --lr-halving`` runs of the same cells (its results carry
``metrics["lr_halving"]``; run them into their own database with the sweep's ``--cache-dir``, so the rate halving
chooses is the sweep's own model, loaded rather than trained again). They are kept apart from the sweep and compared
with it (:func:`halving_lines`): how often halving chose the full sweep's rate per (encoding, task, seed), and whether
each cell's verdict at halving's choice is the full sweep's best-rate verdict. Its cost is in training steps, which
the design fixes (:mod:`pebench.suite.halving`): ``k * ceil(B / k) + B`` per cell and seed, against ``k * B``.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from pebench.analysis import lr, noise, scoring
from pebench.errors import PebenchError
from pebench.store import load as store_load
from pebench.store.database import open_db, safe_url

BASE = 0.003
"""The shared learning rate of the defaults, the one-rate side."""


@dataclass
class TaskSides:
    """One task's results of both sides: encoding -> eval length -> seed -> normalised score, and the rest."""

    task: str
    train_length: int
    one: dict[str, dict[int, dict[int, float]]]
    best: dict[str, dict[int, dict[int, float]]]
    rates: dict[str, dict[int, str]]  # encoding -> seed -> the chosen rate, its lr axis's stored value (0.01)
    sigma: float | None
    time_one: float = 0.0
    time_all: float = 0.0
    at: dict[str, dict[str, dict[int, dict[int, float]]]] = field(default_factory=dict)  # every cell at one rate


@dataclass
class HalvingSide:
    """One task's ``--lr-halving`` results: the rate it chose per (encoding, seed), the scores at that rate
    (encoding -> eval length -> seed -> normalised score) and the training steps of halving and of the full sweep."""

    task: str
    train_length: int
    rates: dict[str, dict[int, str]]
    chosen: dict[str, dict[int, dict[int, float]]]
    steps: int
    steps_full: int


def _is_halving(m: Any) -> bool:
    return isinstance(m, Mapping) and "lr_halving" in m


def halving_sides(df: pd.DataFrame) -> list[HalvingSide]:
    """:class:`HalvingSide` of each task of ``df`` (the results of ``--lr-sweep --lr-halving`` runs)."""
    df = scoring.add_normalised(_latest(df).assign(lr_point=store_load.point_column, lr_value=_lr_value))
    out = []
    for (task, train_length), g in df.groupby(["task", "train_length"], sort=True):
        at_train = g[g["eval_length"] == g["train_length"]]
        marked = at_train[[m.get("lr_halving") == "chosen" for m in at_train["metrics"]]]
        rates = {str(e): {int(s): str(p) for s, p in zip(b["seed"], b["lr_value"], strict=True)}
                 for e, b in marked.groupby("encoding")}  # fmt: skip
        chosen = lr.chosen(g.drop(columns=["lr_point"]), {})
        k = len(set(g["lr_point"]))
        budget = int(marked["config"].iloc[0]["train"]["steps"]) if not marked.empty else 0
        cells = len(marked)
        out.append(HalvingSide(str(task), int(train_length), rates, _norms(chosen),
                               cells * (k * -(-budget // max(k, 1)) + budget), cells * k * budget))  # fmt: skip
    return out


def _only(per: Mapping[str, Mapping[int, Mapping[int, float]]], ran: Mapping[str, set[int]]
          ) -> dict[str, dict[int, dict[int, float]]]:  # fmt: skip
    """``per`` (encoding -> length -> seed -> score) on the encodings and seeds of ``ran`` only."""
    return {e: {L: {s: v for s, v in by.items() if s in seeds} for L, by in per.get(e, {}).items()}
            for e, seeds in ran.items()}  # fmt: skip


def halving_lines(tasks: Sequence[TaskSides], halving: Sequence[HalvingSide]) -> list[str]:
    """How ``--lr-halving`` compares with the full sweep on the (task, encoding, seed) both ran (see the module
    docstring); no lines without halving results."""
    full = {(t.task, t.train_length): t for t in tasks}
    same = total = v_same = v_total = steps = steps_full = 0
    missed: list[str] = []
    changed: list[str] = []
    for h in halving:
        t = full.get((h.task, h.train_length))
        if t is None:
            continue
        both = {e: [s for s in by if s in t.rates.get(e, {})] for e, by in h.rates.items()}
        for e, seeds in both.items():
            for s in seeds:
                total += 1
                if h.rates[e][s] == t.rates[e][s]:
                    same += 1
                else:
                    missed.append(f"{e} on {h.task} seed {s} ({h.rates[e][s]} for {t.rates[e][s]})")
        ran = {e: set(seeds) for e, seeds in both.items() if seeds}
        if not ran:
            continue
        h_v, _ = noise.cell_verdicts(_only(h.chosen, ran), h.train_length, t.sigma)
        f_v, _ = noise.cell_verdicts(_only(t.best, ran), t.train_length, t.sigma)
        v_total += len(h_v)
        v_same += sum(h_v[e] == f_v.get(e) for e in h_v)
        changed += [f"{e} on {h.task} ({f_v.get(e)} -> {h_v[e]})" for e in h_v if h_v[e] != f_v.get(e)]
        steps += h.steps
        steps_full += h.steps_full
    if not total:
        return []
    return [
        f"\n`--lr-halving` on {total} (encoding, task, seed) of the sweep: it chose the full sweep's rate in "
        f"{same} of {total}" + (f" (not: {'; '.join(missed)})" if missed else "") + f"; at its choice {v_same} of "
        f"{v_total} cells have the full sweep's best-rate verdict"
        + (f" (not: {'; '.join(changed)})" if changed else "")
        + f". Training steps: {steps} against the full sweep's {steps_full} ({steps / max(steps_full, 1):.2f})."
    ]


def _norms(rows: pd.DataFrame) -> dict[str, dict[int, dict[int, float]]]:
    out: dict[str, dict[int, dict[int, float]]] = {}
    for r in rows.itertuples():
        if r.norm is not None and scoring.finite(r.norm):
            out.setdefault(str(r.encoding), {}).setdefault(int(r.eval_length), {})[int(r.seed)] = float(r.norm)
    return out


def _lr_value(df: pd.DataFrame) -> pd.Series:
    """The learning rate of each result as its ``lr`` axis's stored value (``0.003``; "" at no rate), from
    ``results.axes``: no point's text is parsed."""
    return store_load.points(df).map(lambda p: p.get(lr.AXIS, "") if set(p) == {lr.AXIS} else "")


def _latest(df: pd.DataFrame) -> pd.DataFrame:
    """The newest result of each (case, seed, evaluated length): a reused or re-run model replaces an older one."""
    return df.sort_values("id").drop_duplicates(["case_id", "seed", "eval_length"], keep="last")


def sides(df: pd.DataFrame, validation: Mapping[int, float], base: float = BASE,
          left_out: list[str] | None = None) -> list[TaskSides]:  # fmt: skip
    """Both sides of each task of ``df`` (the results of ``--lr-sweep`` runs, with ``config``), given the final
    validation of each result id (:func:`pebench.analysis.lr.final_validation`). A task without a result at the
    shared rate is a one-line error, or, given ``left_out``, said there and skipped (a sweep still running)."""
    df = scoring.add_normalised(_latest(df).assign(lr_point=store_load.point_column, lr_value=_lr_value,
                                                    lr_rate=lambda d: store_load.points(d).map(lr.rate_at)))
    out = []
    for (task, train_length), g in df.groupby(["task", "train_length"], sort=True):
        one = g[g["lr_rate"] == base]
        if one.empty:
            why = f"{task}: no result at the shared rate {base:g} (points: {', '.join(sorted(set(g['lr_point'])))})"
            if left_out is None:
                raise PebenchError(f"{why}; sweep a grid that holds it")
            left_out.append(why)
            continue
        best = lr.chosen(g.drop(columns=["lr_point", "lr_rate"]), validation)
        at_train = g[g["eval_length"] == g["train_length"]]
        rates = {str(e): {int(s): str(p) for s, p in zip(b["seed"], b["lr_value"], strict=True)}
                 for e, b in best[best["eval_length"] == best["train_length"]].groupby("encoding")}  # fmt: skip
        config = one["config"].iloc[0]
        out.append(TaskSides(str(task), int(train_length), _norms(one), _norms(best), rates,
                             noise.task_sigma(str(task), config),
                             float(at_train[at_train["lr_rate"] == base]["train_time_s"].fillna(0).sum()),
                             float(at_train["train_time_s"].fillna(0).sum()),
                             {str(p): _norms(r) for p, r in g.groupby("lr_value")}))  # fmt: skip
    return out


def table(tasks: Sequence[TaskSides], base: float = BASE, halving: Sequence[HalvingSide] = ()) -> str:
    """The markdown comparison of :func:`sides` (see the module docstring), with :func:`halving_lines`."""
    lines = [f"| task | seeds | verdict of each encoding: {base:g} -> best rate | rates chosen (per seed) | marked "
             f"winner per length among the encodings swept: {base:g} -> best rate | training time: {base:g}, "
             "every rate |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    cells = same = cols = cols_same = 0
    time_one = time_all = 0.0
    changed: list[str] = []
    unchosen: list[str] = []  # cells whose results have no validation curve: no rate can be chosen
    chosen_count: Counter[str] = Counter()
    for t in tasks:
        one_v, one_w = noise.cell_verdicts(t.one, t.train_length, t.sigma)
        best_v, best_w = noise.cell_verdicts(t.best, t.train_length, t.sigma)
        v_text = ", ".join(f"{e} {one_v[e]}" + ("" if best_v.get(e) == one_v[e] else f" -> **{best_v[e]}**"
                                                 if e in best_v else " -> no rate chosen")
                           for e in one_v)  # fmt: skip
        w_text = ", ".join(f"{L}: {one_w[L] or 'tie'}" + ("" if best_w.get(L) == one_w[L]
                                                           else f" -> **{best_w.get(L) or 'tie'}**")
                           for L in one_w)  # fmt: skip
        r_text = ", ".join(f"{e} {' '.join(p for _, p in sorted(by.items()))}"
                           for e, by in sorted(t.rates.items()))  # fmt: skip
        seeds_n = len({s for e in t.one.values() for by in e.values() for s in by})
        lines.append(f"| {t.task} | {seeds_n} | {v_text} | {r_text} | {w_text} | {t.time_one / 60:.0f} min, "
                     f"{t.time_all / 60:.0f} min |")  # fmt: skip
        unchosen += [f"{e} on {t.task}" for e in one_v if e not in best_v]
        cells += sum(e in best_v for e in one_v)
        same += sum(best_v.get(e) == one_v[e] for e in one_v)
        changed += [f"{e} on {t.task} ({one_v[e]} -> {best_v[e]})" for e in one_v
                    if e in best_v and best_v[e] != one_v[e]]  # fmt: skip
        cols += len(one_w)
        cols_same += sum(best_w.get(L) == one_w[L] for L in one_w)
        time_one += t.time_one
        time_all += t.time_all
        chosen_count.update(p for by in t.rates.values() for p in by.values())
    if cells:
        lines.append(f"\nAt the best rate, {same} of {cells} cells keep their verdict and {cols_same} of {cols} "
                     f"columns their marked winner. Rates chosen: "
                     + ", ".join(f"{p} {n}" for p, n in sorted(chosen_count.items(), key=lambda pn: float(pn[0])))
                     + f". Training time: {base:g} alone {time_one / 3600:.1f} h, the sweep {time_all / 3600:.1f} h"
                     f" ({time_all / max(time_one, 1e-9):.1f}x)."
                     + (f" Changed: {'; '.join(changed)}." if changed else ""))  # fmt: skip
    if unchosen:
        lines.append(f"\nNo rate chosen, left out of every count: {', '.join(unchosen)} (their results have no "
                     "validation curve).")  # fmt: skip
    return "\n".join(lines + fixed_rate_lines(tasks) + halving_lines(tasks, halving))


def fixed_rate_lines(tasks: Sequence[TaskSides]) -> list[str]:
    """For each rate of the grid, how many cells would have their best-rate verdict if every encoding trained at that
    one rate (the cells and seeds that rate has results for) -- is some other shared rate as good as each encoding at
    its best? -- and which cells it misses, with their verdict at that rate and at the best."""
    points = sorted({p for t in tasks for p in t.at}, key=float)
    count = {p: [0, 0] for p in points}  # point -> [cells with the best-rate verdict, cells]
    missed: dict[str, list[str]] = {p: [] for p in points}
    for t in tasks:
        best_v, _ = noise.cell_verdicts(t.best, t.train_length, t.sigma)
        for p, per in t.at.items():
            at_v, _ = noise.cell_verdicts(per, t.train_length, t.sigma)
            count[p][0] += sum(at_v[e] == best_v.get(e) for e in at_v)
            count[p][1] += sum(e in best_v for e in at_v)
            missed[p] += [
                f"{e} on {t.task} ({at_v[e]} -> {best_v[e]})"
                for e in sorted(at_v)
                if e in best_v and at_v[e] != best_v[e]
            ]
    parts = [f"{p} {same} of {total}" for p, (same, total) in count.items()]
    if not parts:
        return []
    lines = [f"\nEvery encoding at one rate, cells with their best-rate verdict: {', '.join(parts)}."]
    lines += [f"Missed at {p}: {'; '.join(m)}." for p, m in missed.items() if m]
    return lines


def collect(db_url: str, offset: int = 0) -> tuple[pd.DataFrame, dict[int, float], pd.DataFrame]:
    """Every ``--lr-sweep`` result of ``db_url`` but those of ``--lr-halving``, with result ids shifted by ``offset``
    (several databases' ids never meet), the final validation of each shifted id, and the ``--lr-halving`` rows."""
    df = store_load.load(db_url)
    if not df.empty:
        df = df[[lr.protocol(o) is not None for o in df["run_options"]]]
    if df.empty:
        raise PebenchError(f"{safe_url(db_url)} holds no --lr-sweep run: run the suite with --lr-sweep first")
    halved = df["metrics"].map(_is_halving)
    engine = open_db(db_url, create=False)
    try:
        validation = lr.final_validation(store_load.curve_points(engine, df[~halved]["id"]))
    finally:
        engine.dispose()
    swept = df[~halved].assign(id=lambda d: d["id"] + offset)
    return swept, {rid + offset: v for rid, v in validation.items()}, df[halved]


def run(db_urls: Sequence[str], base: float = BASE) -> int:
    """Print the table of the ``--lr-sweep`` runs of the databases ``db_urls`` taken together (a task's cells may
    be spread over several: the shards of one run, or runs of other cells; a later database's result of the same
    case and seed replaces an earlier one's), and of their ``--lr-halving`` runs."""
    frames, halved = [], []
    validation: dict[int, float] = {}
    offset = 0
    for url in db_urls:
        df, val, h = collect(url, offset)
        frames.append(df)
        halved.append(h)
        validation |= val
        offset = int(max(df["id"].max() if not df.empty else offset, offset)) + 1
    swept = pd.concat(frames, ignore_index=True)
    left_out: list[str] = []
    tasks = sides(swept, validation, base, left_out) if not swept.empty else []
    if not tasks and left_out:
        raise PebenchError(f"{left_out[0]}; sweep a grid that holds it")
    halving = halving_sides(pd.concat(halved, ignore_index=True))
    print(table(tasks, base, halving))
    if left_out:
        print(f"\nLeft out, no result at the shared rate yet: {'; '.join(left_out)}.")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """The script's exit status: 0, or 2 after a one-line error (a database without an ``--lr-sweep`` run, one that
    cannot be opened: its URL shown without a password)."""
    from pathlib import Path

    p = argparse.ArgumentParser(prog="studies/lr_sweep/verdicts.py", description=__doc__.splitlines()[0])
    p.add_argument("dbs", nargs="+", metavar="DB",
                   help="databases of --lr-sweep runs (URLs or SQLite paths; commas also separate them), compared at "
                        "one shared rate (--base-lr) and at each cell's best rate (docs/defaults.md)")  # fmt: skip
    p.add_argument("--base-lr", type=float, default=BASE, metavar="LR",
                   help="the shared rate (default 3e-3, the one-rate default --lr)")  # fmt: skip
    args = p.parse_args(argv)
    specs = [x for spec in args.dbs for x in spec.split(",") if x]  # URLs, or SQLite files' paths
    try:
        return run([x if "://" in x else f"sqlite:///{Path(x).resolve()}" for x in specs], args.base_lr)
    except PebenchError as err:
        print(f"verdicts.py: error: {safe_url(str(err))}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
