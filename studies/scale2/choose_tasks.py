"""Which tasks to run at the second model scale (issue 69): those that separate the measured encodings most in the
shipped reference, one or two per task family, and what each costs.

    python studies/scale2/choose_tasks.py [--db sqlite:///pebench/data/reference.db] [--min-spread 0.1] [--within 0.05]

Per task: the encodings' mean normalised OOD score at each cell's chosen learning rate (mean over seeds, as the
leaderboard does), its spread across the encodings of the study (the standard deviation: a task where they all score
alike cannot show a change of order), and the reference's training CPU-seconds for those encodings at one seed and
the default scale (the second scale multiplies it). Prints every task, then the choice (:func:`choose`): per family
the cheapest of its most separating tasks.
"""

from __future__ import annotations

import argparse

import pandas as pd

from pebench.analysis import lr
from pebench.analysis.scoring import add_normalised
from pebench.store.load import load

ENCODINGS = ("nope", "sinusoidal", "learned", "rope", "alibi",  # the core five
             "path", "selective", "kerple", "cope", "nope_qknorm", "fire", "stick_breaking")  # the leaders


FAMILIES = {  # docs/tasks.md's table of task families (the Chomsky hierarchy by its classes)
    "seed study": ("k_back", "long_range_match", "shift_invariant", "modular_sum"),
    "algorithmic": ("copy", "reverse", "sort", "add_nocarry"),
    "arithmetic": ("addition",),
    "chomsky regular": ("parity", "even_pairs", "cycle_navigation", "modular_arithmetic"),
    "chomsky context-free": ("modular_arithmetic_brackets", "reverse_string", "stack_manipulation", "solve_equation"),
    "chomsky context-sensitive": ("duplicate_string", "missing_duplicate_string", "odds_first", "binary_addition",
                                  "binary_multiplication", "compute_sqrt", "bucket_sort"),
    "retrieval": ("assoc_recall", "mqar_forget", "passkey", "needle"),
    "MAD": ("mad_recall", "mad_noisy_recall", "mad_fuzzy_recall", "mad_selective_copy", "mad_compression",
            "mad_memorization"),
    "language modelling": ("lm",),
    "template": ("template",),
}
FAMILY_OF = {task: family for family, members in FAMILIES.items() for task in members}


def table(db: str) -> pd.DataFrame:
    df = load(db, encodings=list(ENCODINGS))
    df = add_normalised(lr.at_chosen_rates(db, df[df["status"] == "ok"]))
    ood = df[df["eval_length"] > df["train_length"]]
    cell = ood.groupby(["task", "encoding", "seed"])["norm"].mean().groupby(["task", "encoding"]).mean()
    spread = cell.groupby("task").std().rename("spread")
    ident = df[(df["eval_length"] == df["train_length"]) & (df["seed"] == 0)]
    cost = ident.groupby("task")["train_time_s"].sum().rename("cpu_s")
    out = pd.concat([spread, cost, cell.groupby("task").count().rename("encodings")], axis=1)
    out["family"] = [FAMILY_OF.get(t, "other") for t in out.index]
    return out.sort_values(["family", "spread"], ascending=[True, False])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--db", default="sqlite:///pebench/data/reference.db")
    p.add_argument("--min-spread", type=float, default=0.1)
    p.add_argument("--within", type=float, default=0.05)
    args = p.parse_args()
    t = table(args.db)
    with pd.option_context("display.max_rows", None, "display.max_columns", None, "display.width", 120):
        print(t.round(3))
    print(f"\nchosen ({len(chosen := choose(t, args.min_spread, args.within))} tasks): {','.join(chosen.index)}")
    print(f"their training at the default scale, one seed, {len(ENCODINGS)} encodings: "
          f"{chosen['cpu_s'].sum() / 3600:.1f} CPU-h (both learning rates)")


def choose(t: pd.DataFrame, min_spread: float, within: float) -> pd.DataFrame:
    """Per family, the cheapest task whose spread is within ``within`` of the family's largest; a family whose
    largest spread is under ``min_spread`` (its tasks cannot show a change of order) gives none."""
    picks = []
    for _, rows in t[t["encodings"] == len(ENCODINGS)].groupby("family"):
        best = rows["spread"].max()
        if best >= min_spread:
            picks.append(rows[rows["spread"] >= best - within].sort_values("cpu_s").iloc[:1])
    return pd.concat(picks)


if __name__ == "__main__":
    main()
