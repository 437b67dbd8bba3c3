"""``pebench seed-spread``: each task's seed-to-seed spread measured from a run of several seeds, merged into the
shipped data (``pebench/data/seed_spread.json``, read by :mod:`pebench.analysis.noise`)."""

from __future__ import annotations

import json
from pathlib import Path

from pebench.errors import PebenchError


def shipped_spread_command() -> str:
    """The command that regenerates the shipped seed-spread data, as the data records it (one JSON read: the
    parser's help needs it on every start, without the analysis stack)."""
    path = Path(__file__).resolve().parents[1] / "data" / "seed_spread.json"
    return json.loads(path.read_text())["provenance"]["regenerate"] if path.is_file() else "(no shipped data)"


def spread_command(tasks: str) -> str:
    """The commands that measure the seed spread of ``tasks`` (comma-separated) and merge it into the shipped data."""
    from pebench.bench.tasks import CORE_ENCODINGS

    return (f"pytest suite --encoding {','.join(CORE_ENCODINGS)} --task {tasks} --seeds 3 "
            "--db sqlite:///spread.db && pebench seed-spread --db sqlite:///spread.db "
            "-o pebench/data/seed_spread.json")  # fmt: skip


def seed_spread(db_url: str, run: int | str | None, output: str | None) -> int:
    """``pebench seed-spread``: measure each task's seed spread in ``run`` of ``db_url``, print it, and with
    ``output`` merge it into that JSON file (the run's tasks replace their entries, the others stay)."""
    import datetime as dt

    from pebench.analysis.noise import measure_spread, spread_table
    from pebench.store.load import load

    df = load(db_url, run)
    tasks = measure_spread(df)
    if not tasks:
        raise PebenchError(f"run {run} has no task with two or more seeds of one configuration; run the cases "
                           f"with --seeds 3 first: {shipped_spread_command()}")  # fmt: skip
    print("\n".join(spread_table(tasks)))
    if output:
        first = df.iloc[0]
        provenance = {
            "run": int(first["run_id"]), "git_commit": first["run_git_commit"],
            "git_dirty": bool(first["run_git_dirty"]),
            "torch_version": first["run_torch_version"], "device": first["run_device"],
            "measured": f"{first['run_started_at']:%Y-%m-%d}",
            "written": dt.date.today().isoformat(), "regenerate": spread_command(",".join(sorted(tasks))),
        }  # fmt: skip
        out = Path(output)
        previous = json.loads(out.read_text()) if out.is_file() else {}
        old_prov = {k: v for k, v in previous.get("provenance", {}).items() if k != "what"}  # a file-level one
        kept = {name: {**entry, "provenance": entry.get("provenance") or old_prov}
                for name, entry in previous.get("tasks", {}).items() if name not in tasks}  # fmt: skip
        merged = dict(sorted({**kept, **{t: {**e, "provenance": provenance} for t, e in tasks.items()}}.items()))
        data = {"provenance": {"what": SPREAD_WHAT, "regenerate": spread_command(",".join(merged))}, "tasks": merged}
        out.write_text(json.dumps(data, indent=1, default=str) + "\n")
        print(f"wrote {output} ({len(tasks)} tasks measured in run {provenance['run']}, {len(kept)} kept)")
    return 0


SPREAD_WHAT = ("seed-to-seed standard deviation of one result's normalised score, pooled over the encodings and "
               "evaluated lengths of each task (pebench/analysis/noise.py); each task's provenance is the run that "
               "measured it (pebench seed-spread -o merges: the run's tasks replace their entries, the others stay)")
