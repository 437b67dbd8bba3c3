"""Which few tasks predict an encoding's full aggregate on the shipped reference (the lite tier's study, issue 66).

    python studies/lite/choose.py [--db sqlite:///pebench/data/reference.db] [--out studies/lite/]

For each encoding of full coverage (every task) its full score is the mean over the 36 tasks of its OOD normalised
score (each cell at its chosen learning rate, mean over seeds: task first). A lite set L of tasks predicts it by a
ridge regression on L's scores (one weight a task, :data:`RIDGE`). L is chosen by greedy forward selection within a
budget of training time, each step adding the affordable task that most lowers the leave-one-out error of the map on
the encodings it may see, while the error falls. Validation is leave-one-encoding-out: for each held-out encoding the
selection and the fit run on the other encodings only, then predict it. Reported per budget: Kendall's tau and
Spearman between predicted and actual full scores, the median and worst absolute rank error (the held-out encoding's
predicted rank among the others' actual scores), how often each task was chosen across folds, and the lite set's cost
(the stored training time of ALiBi's models on those tasks, both learning rates, seed 0).

``--write BUDGET`` also records the interval of a run as it was run (issue 90, :mod:`pebench.analysis.lite_coverage`):
each chosen task's seed spread (pooled over the reference encodings with several seeds), the interval factor
calibrated leave-one-encoding-out, and the coverage of single-seed predictions of held-out encodings.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

from pebench.analysis import lite_coverage
from pebench.analysis.lite import LITE_FILE, greedy, inputs_digest, validate

PerSeed = dict[str, dict[str, dict[int, float]]]


def cell_table(url: str) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, tuple[int, int]], PerSeed]:
    """(OOD normalised score per encoding x task, mean over seeds at each cell's chosen rate; ALiBi's training
    seconds per task, both rates, seed 0; each full row's 95% rank range in the full ranking; encoding -> task ->
    seed -> the same score per seed) from the reference at ``url``."""
    from pebench.analysis import lr, noise, ranking, scoring
    from pebench.analysis.page_data import not_ranked
    from pebench.report.data import select, set_aside_sizes
    from pebench.store import load as store_load
    from pebench.store.database import open_db

    engine = open_db(url, create=False)
    try:
        df = store_load.load_light(engine)
        runs = store_load.runs(engine)
        df = df[~df["run_id"].isin({r["id"] for r in runs if not_ranked(r["options"])})]  # a second phase, diagnostics
        sel, ids = select(df, [], "all")
        # the default size only: a larger model's runs (issue 69, "Across scale") are never fitted with it
        sel = set_aside_sizes(sel, [r for r in runs if r["id"] in ids])[0]
        cost = sel[(sel.encoding == "alibi") & (sel.seed == 0) & (sel.eval_length == sel.train_length)]
        cost = cost.groupby("task")["train_time_s"].sum()
        sel = store_load.attach_json(engine, sel)
        sel = lr.chosen(sel, lr.final_validation(store_load.curve_points(engine, sel["id"])))
    finally:
        engine.dispose()
    sel = scoring.add_normalised(sel)
    rows, per, sigmas = [], {}, {}
    for (task, train_length), by_enc in scoring.groups_by_task(sel).items():
        for enc, group in by_enc.items():
            _, ood = scoring.split_lengths(group.by_length, train_length)
            per_seed = scoring.per_seed_norm(group, ood)
            if per_seed:
                rows.append((enc, task, float(np.mean(list(per_seed.values())))))
                per.setdefault(enc, {})[task] = per_seed
                sigmas[task] = noise.task_sigma(task, next(iter(group.rows()))["config"], lr_grid="0.001,0.003")
    table = pd.DataFrame(rows, columns=["encoding", "task", "ood"]).pivot(index="encoding", columns="task",
                                                                          values="ood")  # fmt: skip
    full = ranking.rank(per, sigmas)
    ranges = {r.encoding: (r.rank_low, r.rank_high) for r in full.rows if r.rank_low is not None}
    return table, cost, ranges, per


def reference(url: str) -> tuple[lite_coverage.Reference, pd.Series, dict[str, tuple[int, int]], list[str]]:
    """The reference's full-coverage encodings (:class:`pebench.analysis.lite_coverage.Reference`, cost in minutes),
    ALiBi's training seconds per task, the full ranking's rank ranges, and the partial encodings left out."""
    table, seconds, ranges, per = cell_table(url)
    full_rows = table.dropna()
    cost = seconds.reindex(full_rows.columns).fillna(0).to_numpy() / 60
    ref = lite_coverage.Reference(full_rows, {str(e): per[e] for e in full_rows.index}, cost)
    return ref, seconds, ranges, sorted(set(table.index) - set(full_rows.index))


def write(ref: lite_coverage.Reference, seconds: pd.Series, budget: float, url: str,
          ranges: dict[str, tuple[int, int]]) -> None:
    """The lite tier of ``budget`` (one seed, the current rule) fitted on every full-coverage encoding, with its
    validation (agreement and single-seed coverage), its tasks' seed spread and its interval factor, to
    :data:`LITE_FILE`."""
    from pebench.store import load as store_load
    from pebench.store.database import open_db

    choice = lite_coverage.Choice(budget)
    fold, sd, factor, residuals = lite_coverage.shipped(ref, choice)
    check = validate(ref.table, ref.cost, budget, ranges)
    runs = lite_coverage.validate(ref, choice, ranges)
    engine = open_db(url, create=False)
    try:
        digest = inputs_digest(store_load.load_light(engine))
    finally:
        engine.dispose()
    tasks = [str(ref.table.columns[j]) for j in fold.order]
    with_seeds = sum(1 for e in ref.per_seed.values() if min(len(e[t]) for t in tasks) > 1)
    lite = {"tasks": tasks, "intercept": fold.intercept,
            "weights": dict(zip(tasks, map(float, fold.weights), strict=True)),
            "residuals": [round(float(v), 5) for v in residuals],
            "seed_sd": {t: round(v, 5) for t, v in sd.items()},
            "seed_sd_from": f"the reference's per-seed OOD scores: pooled sd over the {with_seeds} encodings with "
                            "several seeds on every lite task",
            "interval_factor": round(factor, 4), "seeds": choice.seeds,
            "reference_scores": {str(e): round(float(v), 5) for e, v in zip(ref.table.index, ref.full, strict=True)},
            "full_tasks": [str(t) for t in ref.table.columns],
            "budget_min": budget, "cost_min": round(float(seconds.reindex(tasks).sum() / 60), 1),
            "validation": {k: check[k] for k in ("tau", "spearman", "median_rank_error", "worst_rank_error",
                                                  "within_3", "within_3_or_range")}
            | {"coverage_single_seed": runs["coverage"], "coverage_predictions": runs["predictions"],
               "coverage_held_out_encodings": runs["held_out"], "coverage_map_only": runs["coverage_map_only"],
               "coverage_mutual": runs["coverage_mutual"], "coverage_mutual_map_only": runs["coverage_mutual_map_only"],
               "coverage_mutual_pairs": runs["mutual_pairs"]},
            "reference_digest": digest, "derived_by": f"python studies/lite/choose.py --write {budget:g}"}  # fmt: skip
    LITE_FILE.write_text(json.dumps(lite, indent=1) + "\n")
    print(f"wrote {LITE_FILE}: {', '.join(tasks)} (tau {check['tau']:.3f}; single-seed coverage "
          f"{runs['coverage']:.2f} of {runs['predictions']}, interval factor {factor:.2f})")


BUDGETS = (8.0, 12.0, 16.0, 20.0, 24.0, 30.0, 40.0, 60.0)
"""Budgets tried: minutes of ALiBi's training (one thread a model, both learning rates, seed 0); with two workers a
run's wall time is about half of it plus evaluation."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default="sqlite:///pebench/data/reference.db")
    parser.add_argument("--out", type=Path, default=Path("studies/lite"))
    parser.add_argument("--write", type=float, metavar="BUDGET", help="write the lite tier of this budget to "
                        f"{LITE_FILE.relative_to(Path.cwd()) if LITE_FILE.is_relative_to(Path.cwd()) else LITE_FILE}")
    args = parser.parse_args()
    ref, seconds, ranges, partial = reference(args.db)
    full_rows, cost = ref.table, ref.cost
    print(f"{len(full_rows)} encodings of full coverage ({len(partial)} partial: {', '.join(partial)}), "
          f"{full_rows.shape[1]} tasks; full tier {cost.sum():.1f} min of ALiBi's training")
    print(f"budget  {'tasks (all encodings)':55s}  min    tau    rho    rank err med|worst  <=3  <=3|in range")
    curve = []
    for budget in BUDGETS:
        tasks = [full_rows.columns[j] for j in greedy(full_rows.to_numpy(), full_rows.mean(axis=1).to_numpy(), cost,
                                                      budget)]  # fmt: skip
        r = validate(full_rows, cost, budget, ranges) | {"budget_min": budget, "tasks": tasks,
                                                  "cost_min": round(float(seconds.reindex(tasks).sum() / 60), 1)}
        curve.append(r)
        print(f"{budget:5.0f}   {', '.join(tasks):55.55s}  {r['cost_min']:5.1f}  {r['tau']:.3f}  {r['spearman']:.3f}  "
              f"{r['median_rank_error']:.0f} | {r['worst_rank_error']:.0f}             {r['within_3']:.0%}  "
              f"{r['within_3_or_range']:.0%}")
    if args.write is not None:
        write(ref, seconds, args.write, args.db, ranges)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "validation.json").write_text(json.dumps({"full_cost_min": round(float(cost.sum()), 1),
                                                          "curve": curve}, indent=1) + "\n")  # fmt: skip


if __name__ == "__main__":
    main()
