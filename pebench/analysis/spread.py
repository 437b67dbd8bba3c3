"""``pebench seed-spread``: each task's seed-to-seed spread measured from a run of several seeds, merged into the
shipped data (``pebench/data/seed_spread.json``, read by :mod:`pebench.analysis.noise`).

The tasks whose spread was measured on the budget side of the stop-verdict study's files are added by that study's
script (``python studies/stop_verdicts/spread.py``), which writes through :func:`merge_spread` too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pebench.errors import PebenchError

CORE_ENCODINGS = ("nope", "sinusoidal", "learned", "rope", "alibi")
"""The five core encodings: the shipped seed spread is measured on them, and ``pebench bench --tasks`` times them
unless told otherwise."""


def shipped_spread_command() -> str:
    """The command that regenerates the shipped seed-spread data, as the data records it (one JSON read: the
    parser's help needs it on every start, without the analysis stack)."""
    path = Path(__file__).resolve().parents[1] / "data" / "seed_spread.json"
    return json.loads(path.read_text())["provenance"]["regenerate"] if path.is_file() else "(no shipped data)"


def spread_command(tasks: str, lr_grid: str | None = None) -> str:
    """The commands that measure the seed spread of ``tasks`` (comma-separated) and merge it into the shipped data:
    at one learning rate (``--lr-sweep off``, the nightly's protocol), or with ``lr_grid`` at that learning-rate
    protocol (the default grid needs no flag)."""
    from pebench.analysis import lr

    flag = "--lr-sweep off " if lr_grid is None else "" if lr_grid == lr.grid_text("") else f"--lr-sweep {lr_grid} "
    return (f"pytest suite --encoding {','.join(CORE_ENCODINGS)} --task {tasks} --seeds 3 {flag}"
            "--db sqlite:///spread.db && pebench seed-spread --db sqlite:///spread.db "
            "-o pebench/data/seed_spread.json")  # fmt: skip


def merge_spread(out: Path, measured: dict[str, Any]) -> None:
    """Write ``measured`` (task -> entry with its provenance) into the spread file ``out``, which holds per task one
    entry per protocol: a measured entry replaces the task's entry of the same protocol; the task's entries of other
    protocols and the other tasks stay."""
    from pebench.analysis.noise import task_entries

    previous = json.loads(out.read_text()) if out.is_file() else {"tasks": {}}
    old_prov = {k: v for k, v in previous.get("provenance", {}).items() if k != "what"}  # a file-level one
    merged: dict[str, list[dict[str, Any]]] = {}
    n_kept = 0
    for name in sorted({*previous.get("tasks", {}), *measured}):
        new = measured.get(name)
        kept = [{**e, "provenance": e.get("provenance") or old_prov} for e in task_entries(name, previous)
                if new is None or e.get("protocol") != new["protocol"]]  # fmt: skip
        n_kept += len(kept)
        merged[name] = sorted(kept + ([new] if new else []), key=lambda e: e.get("lr_grid") or "")
    one_rate = [t for t, es in merged.items() if any("source" not in e["provenance"] and not e.get("lr_grid")
                                                      for e in es)]  # fmt: skip
    regenerate = spread_command(",".join(one_rate)) if one_rate else "see each task's provenance"
    data = {"provenance": {"what": SPREAD_WHAT, "regenerate": regenerate}, "tasks": merged}
    out.write_text(json.dumps(data, indent=1, default=str) + "\n")
    print(f"wrote {out} ({len(measured)} tasks measured, {n_kept} entries kept)")


def seed_spread(db_url: str, run: int | str | None, output: str | None) -> int:
    """``pebench seed-spread``: measure each task's seed spread in ``run`` of ``db_url``, print it, and with
    ``output`` merge it into that JSON file (each measured task replaces its entry of the run's protocol; other
    protocols' entries and other tasks stay)."""
    import datetime as dt

    from pebench.analysis import lr
    from pebench.analysis.noise import measure_spread, spread_table
    from pebench.store.load import load

    df = load(db_url, run)
    grid = lr.protocol(df["run_options"].iloc[0]) if not df.empty else None
    if grid is not None:  # the learning-rate protocol: its cells at their chosen rates, the spread of that protocol
        df = lr.at_chosen_rates(db_url, df)
    tasks = measure_spread(df, grid)
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
            "written": dt.date.today().isoformat(), "regenerate": spread_command(",".join(sorted(tasks)), grid),
        }  # fmt: skip
        grid_entry = {"lr_grid": grid} if grid is not None else {}  # which protocol, readable without the hash
        merge_spread(Path(output), {t: {**e, **grid_entry, "provenance": provenance} for t, e in tasks.items()})
    return 0


SPREAD_WHAT = (
    "seed-to-seed standard deviation of one result's normalised score, pooled over the encodings and "
    "evaluated lengths of each task (pebench/analysis/noise.py); each task's provenance is the run that "
    "measured it, or the stop-verdict file whose budget side it was measured on (source; python "
    "studies/stop_verdicts/spread.py); per task one entry per protocol (lr_grid: the learning-rate "
    "protocol's rates, absent for one rate) (pebench seed-spread -o merges: a measured entry replaces the "
    "task's entry of the same protocol, the others stay)"
)
