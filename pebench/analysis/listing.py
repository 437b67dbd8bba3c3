"""``pebench results``: the runs of a database with their status, then their results, filtered by run, encoding and
task; ``--stale``: the cells whose latest result is not what this pebench computes."""

from __future__ import annotations

from pebench.errors import PebenchError


def names(text: str | None) -> list[str] | None:
    """``"a, b"`` -> ``["a", "b"]``; None stays None."""
    return None if text is None else [x.strip() for x in text.split(",") if x.strip()]


def results(url: str, run_option: str | None, encodings: str | None, tasks_option: str | None,
            only_stale: bool = False) -> int:  # fmt: skip
    """``pebench results``: the runs shown (``run_option``: an id, latest (the default), previous or all) with their
    status, then their results, of the encodings and tasks named (comma-separated; a name with no result is a
    one-line error listing those that have); ``only_stale``: :func:`stale` instead."""
    import pandas as pd

    from pebench.store.load import load, run_table

    chosen = run_option or "latest"
    run = None if chosen == "all" or (chosen in ("latest", "previous") and run_table(url).empty) else chosen
    if run_option is None and run is not None and not _has_finished_run(url):
        chosen, run = "all", None  # no finished run yet: every run, so an interrupted or running one shows
    if only_stale:
        return stale(url, None if run_option is None else run)  # by default the latest result of every cell
    encs, tasks = names(encodings), names(tasks_option)
    df = load(url, run, encs, tasks)
    for flag, asked, column in (("--encoding", encs, "encoding"), ("--task", tasks, "task")):
        if missing := sorted(set(asked or ()) - set(df[column])):
            have = sorted(set(load(url, run)[column]))
            where = "this database" if run is None else f"run {chosen} of this database"
            raise PebenchError(f"{flag} {','.join(missing)}: no results in {where} (it has: "
                               f"{', '.join(have) or 'none'})")  # fmt: skip
    runs = run_table(url, sorted(set(df["run_id"])) if run is not None else None)
    if not runs.empty:
        with pd.option_context("display.max_rows", None, "display.width", 200):
            print(runs.to_string(index=False) + "\n")
    if df.empty:
        print("no results")
        return 0
    # why training ended (learned / plateau / budget / diverged; "-" for results from before the stop rule)
    df["stop"] = [(m or {}).get("stop_reason", "-") if isinstance(m, dict) else "-" for m in df["metrics"]]
    df["train_steps"] = df["train_steps"].astype("Int64")
    cols = ["run_id", "case_id", "seed", "status", "score", "loss", "sequence_accuracy", "chance_level",
            "train_steps", "stop", "train_time_s"]  # fmt: skip
    with pd.option_context("display.max_rows", None, "display.width", 200):
        print(df[cols].to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    return 0


def stale(url: str, run: int | str | None) -> int:
    """``pebench results --stale``: the cells whose latest result is not what this pebench computes."""
    from pebench.analysis.reference import stale_in
    from pebench.engine.code import cells_of
    from pebench.store.database import open_readonly

    engine = open_readonly(url)
    try:
        cells, n = stale_in(engine, run)
    finally:
        engine.dispose()
    for line in cells:
        print(line)
    distinct = len(cells_of(cells))
    runs = f" ({len(cells)} in (run, cell) pairs: each run holding a cell is judged)" if len(cells) > distinct else ""
    print(f"{distinct} stale cell(s) of {n} (encoding, task) pairs{runs}"
          + ("; rebuild them with pebench rebuild (the others are kept)" if cells else ""))  # fmt: skip
    return 0


def _has_finished_run(url: str) -> bool:
    """Whether ``latest`` (the newest finished run) names a run in the database at ``url``."""
    from pebench.store.database import open_readonly, resolve_run_id

    engine = open_readonly(url)
    try:
        resolve_run_id(engine, "latest")
        return True
    except PebenchError:
        return False
    finally:
        engine.dispose()
