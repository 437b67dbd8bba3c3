"""Mechanism diagnostics for the shipped reference (issue 89, item 4): retrain a reference cell's model with its run's
own settings, and where the retrained model reproduces the stored scores exactly (same CPU type), attach the
diagnostics it measures to the stored results; else keep the retrained results as a run of their own.

A cell (encoding, task) is reproduced at seed 0 and at the learning rate its run's protocol chose for it
(:func:`pebench.analysis.lr.at_chosen_rates`): one model per cell, trained with the run's stored options
(:func:`pebench.suite.rebuild.run_flags`) and ``--lr-sweep off --lr RATE --seeds 1`` (the same configuration, so the
same model key and weights as the sweep's model at that rate), with the diagnostics on, into a part database of its own
under ``--parts`` (a cell whose part is complete is not retrained: the script resumes). ``--apply`` then writes, for
every part whose scores (score, loss, token and sequence accuracy at every length) equal the stored ones bit for bit,
the diagnostics into those stored results' metrics, and lists the cells that did not reproduce.

    python studies/diagnostics/attach.py --db sqlite:///pebench/data/reference.db --encodings rope,alibi \\
        --tasks k_back,copy --parts studies/diagnostics/parts [--shard 1/2] [--apply]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd
from sqlalchemy import select, update

from pebench.analysis import lr
from pebench.analysis.across_scale import size_sweep
from pebench.analysis.page_data import extended
from pebench.engine.diagnostics import DIAGNOSTICS
from pebench.store import load as store_load
from pebench.store.database import open_db
from pebench.store.schema import Result
from pebench.suite.launch import run_suite
from pebench.suite.rebuild import run_flags

SCORES = ("score", "loss", "token_accuracy", "sequence_accuracy")
"""What must be bit-identical for a retrained model to stand for the stored one."""


def cells(url: str, encodings: list[str], tasks: list[str]) -> pd.DataFrame:
    """The stored seed-0 rows of every (encoding, task) asked, at each cell's chosen rate, from the latest run at the
    default model size that holds the cell (never a run set aside as another size,
    :func:`pebench.analysis.across_scale.size_sweep`, nor a second phase's), with ``run_options`` and ``lr_rate``."""
    df = store_load.load(url)
    df = df[df["encoding"].isin(encodings) & df["task"].isin(tasks) & (df["seed"] == 0)]
    df = df[[not (size_sweep(o) or extended(o)) for o in df["run_options"]]]
    out = []
    for _, cell in df.groupby(["encoding", "task"]):
        run = cell[cell["run_id"] == cell.sort_values("id")["run_id"].iloc[-1]]
        chosen = lr.at_chosen_rates(url, run)
        rates = lr.points(chosen).map(lr.rate_at) if "lr" in str(chosen["point"].iloc[0]) else None
        out.append(chosen.assign(lr_rate=list(rates) if rates is not None else [None] * len(chosen)))
    return pd.concat(out) if out else df.iloc[0:0]


def part_of(parts: Path, encoding: str, task: str) -> Path:
    return parts / f"{encoding}-{task}.db"


def reproduce(rows: pd.DataFrame, parts: Path, cache: str, devices: dict[int, str]) -> int:
    """Train each cell of ``rows`` whose part is missing; the failed cells' count. Says first when a cell's run was
    trained on another CPU than this one (``devices``: run id -> its stored device): bit for bit is then unlikely."""
    import torch

    from pebench.store.provenance import device_name

    here = device_name(torch.device("cpu"))
    for run in sorted({int(r) for r in rows["run_id"]}):
        if devices.get(run, "").split(" x")[0] != here.split(" x")[0]:
            print(f"pebench: run {run} was trained on {devices.get(run)!r}, this is {here!r}: its cells will likely "
                  "not reproduce bit for bit (docs/reproducibility.md)", flush=True)  # fmt: skip
    failed = 0
    for (encoding, task), cell in rows.groupby(["encoding", "task"]):
        part = part_of(parts, encoding, task)
        if part.is_file():
            continue
        flags = [f for f in run_flags(cell["run_options"].iloc[0]) if not f.startswith(("--lr-sweep", "--seeds"))]
        rate = cell["lr_rate"].iloc[0]
        flags += ["--lr-sweep=off", "--seeds=1", "--encoding", encoding, "--task", task, "--cache-dir", cache,
                  "--db", f"sqlite:///{part}.tmp", "-q"] + ([f"--lr={rate}"] if rate is not None else [])  # fmt: skip
        print(f"pebench: {encoding} on {task} (run {int(cell['run_id'].iloc[0])}, lr {rate}): {' '.join(flags)}",
              flush=True)  # fmt: skip
        if run_suite(flags) == 0:
            Path(f"{part}.tmp").rename(part)
        else:
            failed += 1
    return failed


def apply(url: str, rows: pd.DataFrame, parts: Path) -> list[str]:
    """Attach each reproduced part's diagnostics to the stored rows; the lines of the cells that did not reproduce."""
    engine, off = open_db(url), []
    try:
        for (encoding, task), cell in rows.groupby(["encoding", "task"]):
            part = part_of(parts, encoding, task)
            if not part.is_file():
                off.append(f"{encoding} on {task}: not retrained yet")
                continue
            new = store_load.load(f"sqlite:///{part}").set_index("eval_length")
            stored = cell.set_index("eval_length")
            same = set(new.index) >= set(stored.index) and all(
                new.at[n, c] == stored.at[n, c] or (pd.isna(new.at[n, c]) and pd.isna(stored.at[n, c]))
                for n in stored.index for c in SCORES)  # fmt: skip
            if not same:
                off.append(f"{encoding} on {task}: the retrained scores differ from the stored ones")
                continue
            with engine.begin() as conn:
                for n, rid in stored["id"].items():
                    metrics = dict(conn.execute(select(Result.metrics).where(Result.id == int(rid))).scalar_one() or {})
                    metrics |= {k: new.at[n, "metrics"].get(k) for k in (*DIAGNOSTICS, "diagnostics_by_layer")}
                    conn.execute(update(Result).where(Result.id == int(rid)).values(metrics=metrics))
    finally:
        engine.dispose()
    return off


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--encodings", required=True)
    parser.add_argument("--tasks", required=True)
    parser.add_argument("--parts", type=Path, default=Path("studies/diagnostics/parts"))
    parser.add_argument("--cache-dir", default=".pebench_cache/diagnostics")
    parser.add_argument("--shard", default="1/1", help="I/N: every N-th cell from the I-th")
    parser.add_argument("--apply", action="store_true", help="attach the reproduced cells' diagnostics")
    args = parser.parse_args()
    rows = cells(args.db, args.encodings.split(","), args.tasks.split(","))
    if args.apply:
        off = apply(args.db, rows, args.parts)
        print("\n".join(off) or "every cell reproduced: diagnostics attached")
        return 0
    i, n = (int(x) for x in args.shard.split("/"))
    keys = sorted({(e, t) for e, t in zip(rows["encoding"], rows["task"], strict=True)})[i - 1 :: n]
    mine = rows[[(e, t) in keys for e, t in zip(rows["encoding"], rows["task"], strict=True)]]
    args.parts.mkdir(parents=True, exist_ok=True)
    engine = open_db(args.db, create=False)
    try:
        devices = {int(r["id"]): str(r.get("device") or "") for r in store_load.runs(engine)}
    finally:
        engine.dispose()
    return 1 if reproduce(mine, args.parts, args.cache_dir, devices) else 0


if __name__ == "__main__":
    sys.exit(main())
