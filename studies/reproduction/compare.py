"""Cells of the shipped reference rebuilt on another machine, compared result by result (issue 65, item 4).

    python studies/reproduction/compare.py studies/reproduction/sort_rebuild_core.db [...]

For every result of the given databases, the reference's result of the same case (encoding, task, case id with its
learning rate, seed, evaluation length) and configuration: whether the score is bit-identical, and the difference of
the normalised scores against the task's measured seed-to-seed sigma (pebench/data/seed_spread.json). Prints one line
per (encoding, task) and the machines: the rebuild's ``runs.device`` (CPU model, capability, BLAS, threads) and the
reference run's.
"""

from __future__ import annotations

import argparse
import json
import sqlite3

import pandas as pd

from pebench.analysis import noise, scoring

REFERENCE = "pebench/data/reference.db"
KEYS = ["encoding", "task", "case_id", "seed", "train_length", "eval_length", "config_hash"]
COLUMNS = KEYS + ["status", "score", "metric", "higher_is_better", "chance_level", "run_id", "config"]


def results(path: str) -> pd.DataFrame:
    """The latest result of each case and seed of the database at ``path``, with its run's device."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        df = pd.read_sql(f"select {', '.join(COLUMNS)}, id from results", con)
        runs = pd.read_sql("select id as run_id, device from runs", con)
    finally:
        con.close()
    df = df.sort_values("id").drop_duplicates(KEYS, keep="last").merge(runs, on="run_id")
    df["config"] = df["config"].map(json.loads)
    return scoring.add_normalised(df)


def compare(rebuilt: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    """Per (encoding, task): results compared, bit-identical, largest |normalised difference| and its ratio to the
    task's sigma; the devices."""
    both = rebuilt.merge(reference, on=KEYS, suffixes=("", "_ref"))
    rows = []
    for (enc, task), g in both.groupby(["encoding", "task"]):
        sigma = noise.task_sigma(task, g["config"].iloc[0], lr_grid="0.001,0.003")
        diff = (g["norm"] - g["norm_ref"]).abs()
        rows.append(
            {
                "encoding": enc,
                "task": task,
                "results": len(g),
                "identical": int((g["score"] == g["score_ref"]).sum()),
                "max_norm_diff": round(float(diff.max()), 4),
                "sigma": sigma,
                "max_diff_over_sigma": round(float(diff.max() / sigma), 2) if sigma else None,
                "device": "; ".join(sorted(set(g["device"]))),
                "reference_device": "; ".join(sorted(set(g["device_ref"]))),
            }
        )
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rebuilt", nargs="+", help="SQLite files of rebuilt cells")
    parser.add_argument("--reference", default=REFERENCE)
    args = parser.parse_args()
    reference = results(args.reference)
    table = pd.concat([compare(results(p), reference) for p in args.rebuilt], ignore_index=True)
    print(table.to_string(index=False))


if __name__ == "__main__":
    main()
