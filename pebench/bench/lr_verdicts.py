"""``pebench bench --lr-verdicts DB``: do the verdicts change when each encoding trains at its best learning rate?
(issue 30, item 4)

Reads every ``--lr-sweep`` run of a database (shards, merged files and several sessions' runs together; a later
result of the same case and seed replaces an earlier one) and compares, per (task, encoding), two sides:

- **one rate**: the results at the shared default rate (``--base``, 3e-3), the point ``lr0.003`` of the sweep, which
  is the model a run without ``--lr-sweep`` trains;
- **best rate**: each (encoding, task, seed) at the rate :func:`pebench.analysis.lr.chosen` picks, by the final
  validation at the training length only (the suite's own choice, never the out-of-distribution lengths).

Per cell the learned / partly / not-learned verdict of the mean normalised score over seeds at the training length
(:func:`pebench.analysis.scoring.learned_verdict`) and per evaluated length the marked winner
(:func:`pebench.analysis.noise.marked_best` with the task's measured spread), one rate vs best rate; the rates each
cell chose per seed; the training time of each side (the sum of the models' stored ``train_time_s``: the one-rate
side trains one model per cell and seed, the sweep every rate).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from pebench.analysis import lr, noise, scoring
from pebench.case import point_of
from pebench.errors import PebenchError
from pebench.store import load as store_load
from pebench.store.database import open_db

BASE = 0.003
"""The shared learning rate of the defaults, the one-rate side."""


@dataclass
class TaskSides:
    """One task's results of both sides: encoding -> eval length -> seed -> normalised score, and the rest."""

    task: str
    train_length: int
    one: dict[str, dict[int, dict[int, float]]]
    best: dict[str, dict[int, dict[int, float]]]
    rates: dict[str, dict[int, str]]  # encoding -> seed -> the chosen point (lr0.01)
    sigma: float | None
    time_one: float = 0.0
    time_all: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


def _norms(rows: pd.DataFrame) -> dict[str, dict[int, dict[int, float]]]:
    out: dict[str, dict[int, dict[int, float]]] = {}
    for r in rows.itertuples():
        if r.norm is not None and scoring.finite(r.norm):
            out.setdefault(str(r.encoding), {}).setdefault(int(r.eval_length), {})[int(r.seed)] = float(r.norm)
    return out


def _latest(df: pd.DataFrame) -> pd.DataFrame:
    """The newest result of each (case, seed, evaluated length): a reused or re-run model replaces an older one."""
    return df.sort_values("id").drop_duplicates(["case_id", "seed", "eval_length"], keep="last")


def sides(df: pd.DataFrame, validation: Mapping[int, float], base: float = BASE) -> list[TaskSides]:
    """Both sides of each task of ``df`` (the results of ``--lr-sweep`` runs, with ``config``), given the final
    validation of each result id (:func:`pebench.analysis.lr.final_validation`)."""
    df = scoring.add_normalised(_latest(df).assign(lr_point=lambda d: d["case_id"].map(point_of)))
    base_point = f"lr{base:g}"
    out = []
    for (task, train_length), g in df.groupby(["task", "train_length"], sort=True):
        one = g[g["lr_point"] == base_point]
        if one.empty:
            raise PebenchError(f"{task}: no result at the shared rate {base:g} (points: "
                               f"{', '.join(sorted(set(g['lr_point'])))}); sweep a grid that holds it")  # fmt: skip
        best = lr.chosen(g.drop(columns=["lr_point"]), validation)
        at_train = g[g["eval_length"] == g["train_length"]]
        rates = {str(e): {int(s): str(p) for s, p in zip(b["seed"], b["lr_point"], strict=True)}
                 for e, b in best[best["eval_length"] == best["train_length"]].groupby("encoding")}  # fmt: skip
        config = one["config"].iloc[0]
        out.append(TaskSides(str(task), int(train_length), _norms(one), _norms(best), rates,
                             noise.task_sigma(str(task), config),
                             float(at_train[at_train["lr_point"] == base_point]["train_time_s"].fillna(0).sum()),
                             float(at_train["train_time_s"].fillna(0).sum())))  # fmt: skip
    return out


def table(tasks: Sequence[TaskSides], base: float = BASE) -> str:
    """The markdown comparison of :func:`sides` (see the module docstring)."""
    lines = [f"| task | seeds | verdict of each encoding: {base:g} -> best rate | rates chosen (per seed) | marked "
             f"winner per length among the encodings swept: {base:g} -> best rate | training time: {base:g}, "
             "every rate |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    cells = same = cols = cols_same = 0
    time_one = time_all = 0.0
    changed: list[str] = []
    chosen_count: Counter[str] = Counter()
    for t in tasks:
        one_v, one_w = noise.cell_verdicts(t.one, t.train_length, t.sigma)
        best_v, best_w = noise.cell_verdicts(t.best, t.train_length, t.sigma)
        v_text = ", ".join(f"{e} {one_v[e]}" + ("" if best_v.get(e) == one_v[e] else f" -> **{best_v.get(e)}**")
                           for e in one_v)  # fmt: skip
        w_text = ", ".join(f"{L}: {one_w[L] or 'tie'}" + ("" if best_w.get(L) == one_w[L]
                                                           else f" -> **{best_w.get(L) or 'tie'}**")
                           for L in one_w)  # fmt: skip
        r_text = ", ".join(f"{e} {' '.join(p.removeprefix('lr') for _, p in sorted(by.items()))}"
                           for e, by in sorted(t.rates.items()))  # fmt: skip
        seeds_n = len({s for e in t.one.values() for by in e.values() for s in by})
        lines.append(f"| {t.task} | {seeds_n} | {v_text} | {r_text} | {w_text} | {t.time_one / 60:.0f} min, "
                     f"{t.time_all / 60:.0f} min |")  # fmt: skip
        cells += len(one_v)
        same += sum(best_v.get(e) == one_v[e] for e in one_v)
        changed += [f"{e} on {t.task} ({one_v[e]} -> {best_v.get(e)})" for e in one_v if best_v.get(e) != one_v[e]]
        cols += len(one_w)
        cols_same += sum(best_w.get(L) == one_w[L] for L in one_w)
        time_one += t.time_one
        time_all += t.time_all
        chosen_count.update(p for by in t.rates.values() for p in by.values())
    if cells:
        lines.append(f"\nAt the best rate, {same} of {cells} cells keep their verdict and {cols_same} of {cols} "
                     f"columns their marked winner. Rates chosen: "
                     + ", ".join(f"{p.removeprefix('lr')} {n}" for p, n in sorted(chosen_count.items(),
                                                                           key=lambda pn: float(pn[0][2:])))
                     + f". Training time: {base:g} alone {time_one / 3600:.1f} h, the sweep {time_all / 3600:.1f} h"
                     f" ({time_all / max(time_one, 1e-9):.1f}x)."
                     + (f" Changed: {'; '.join(changed)}." if changed else ""))  # fmt: skip
    return "\n".join(lines)


def collect(db_url: str, base: float = BASE) -> list[TaskSides]:
    """:func:`sides` of every ``--lr-sweep`` run in ``db_url``."""
    df = store_load.load(db_url)
    if not df.empty:
        df = df[[lr.protocol(o) is not None for o in df["run_options"]]]
    if df.empty:
        raise PebenchError(f"{db_url} holds no --lr-sweep run: run the suite with --lr-sweep first")
    engine = open_db(db_url, create=False)
    try:
        validation = lr.final_validation(store_load.curve_points(engine, df["id"]))
    finally:
        engine.dispose()
    return sides(df, validation, base)


def main(db_urls: Sequence[str], base: float = BASE) -> int:
    """Print the table of the ``--lr-sweep`` runs of the databases ``db_urls`` (one task's results in one of them)."""
    print(table([t for url in db_urls for t in collect(url, base)], base))
    return 0
