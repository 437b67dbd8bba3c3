"""Each task's seed spread from the budget side of the stop-verdict files (3 seeds of the core encodings trained to
the task's budget at the defaults), printed, and with ``-o`` added to the shipped seed-spread data for the tasks it
lacks at these defaults.

    python studies/stop_verdicts/spread.py [DIR] [-o pebench/data/seed_spread.json]

A task already measured at the same protocol keeps its entry; a task whose seeds all scored alike (sigma 0) is left
out, as it would mark any single-seed difference; a file measured at other task defaults (``verdicts.py``'s
:func:`stale`) is left out, with why. Each task's provenance names its file. The spread of a run with several seeds
is ``pebench seed-spread`` (:mod:`pebench.analysis.spread`, which writes the file for both).
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from pebench.errors import PebenchError

HERE = Path(__file__).resolve().parent
DESCRIPTION = ("Each task's seed spread from the budget side of the stop-verdict files, printed; with -o, merged into "
               "the seed-spread data for the tasks it lacks at these defaults.")  # fmt: skip


def study(name: str) -> ModuleType:
    """The study script ``name``.py beside this one, as a module (the study scripts are not a package)."""
    module_name = f"studies_stop_verdicts_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # before running it: its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def verdict_frame(paths: list[Path]) -> tuple[Any, list[str]]:
    """The budget side of the stop-verdict files ``paths`` (every seed of the core encodings trained to the task's
    budget at the defaults, evaluated at the quick tier's lengths) as result rows for
    :func:`pebench.analysis.noise.measure_spread`, leaving out the stale files (measured at other task defaults);
    and the stale files' names with why."""
    import pandas as pd

    from pebench.engine.runner import Runner
    from pebench.engine.settings import Settings
    from pebench.status import ResultStatus

    stale = study("verdicts").stale
    runner = Runner(Settings(progress=False))
    rows, left_out = [], []
    for path in sorted(paths):
        data = json.loads(path.read_text())
        if (why := stale(data, runner)) is not None:
            left_out.append(f"{path.stem} ({why})")
            continue
        for r in data["rows"]:
            for length, score in r["budget"].items():
                rows.append({"task": data["task"], "encoding": r["encoding"], "seed": r["seed"],
                             "eval_length": int(length), "score": score, "status": ResultStatus.OK,
                             "metric": data["metric"], "higher_is_better": data["higher_is_better"],
                             "chance_level": data["chance"], "config": data["config"],
                             "source": str(path)})  # fmt: skip
    return pd.DataFrame(rows), left_out


def from_verdicts(directory: str, output: str | None) -> int:
    """Each task's seed spread from the budget side of the stop-verdict files in ``directory``
    (:func:`verdict_frame`), printed, and with ``output`` merged into it for the tasks it lacks at these defaults
    (see the module docstring)."""
    from pebench.analysis.noise import measure_spread, spread_table, task_entries
    from pebench.analysis.spread import merge_spread

    paths = sorted(Path(directory).glob("*.json"))
    if not paths:
        raise PebenchError(f"{directory} holds no stop-verdict file: python studies/stop_verdicts/verdicts.py "
                           f"TASKS --k 3 --out {directory} writes them")  # fmt: skip
    df, stale = verdict_frame(paths)
    tasks = measure_spread(df) if not df.empty else {}
    if not tasks:
        raise PebenchError(f"no stop-verdict file in {directory} has two or more seeds at today's defaults")
    print("\n".join(spread_table(tasks)))
    if stale:
        print("left out (stale): " + ", ".join(stale))
    if output:
        previous = json.loads(Path(output).read_text()) if Path(output).is_file() else {"tasks": {}}
        kept = [t for t in tasks if any(e.get("protocol") == tasks[t]["protocol"] for e in task_entries(t, previous))]
        flat = [t for t in tasks if tasks[t]["sigma"] == 0]
        tasks = {t: e for t, e in tasks.items() if t not in kept and t not in flat}
        if kept:
            print("kept (measured at these defaults already): " + ", ".join(kept))
        if flat:
            print("left out (no spread: every seed scored alike, which would mark any single-seed difference): "
                  + ", ".join(flat))  # fmt: skip
        provenance = {t: {"source": str(df[df["task"] == t]["source"].iloc[0]), "written": dt.date.today().isoformat(),
                          "regenerate": f"python studies/stop_verdicts/verdicts.py {t} --k 3 --out {directory} && "
                                        f"python studies/stop_verdicts/spread.py {directory} -o {output}"}
                      for t in tasks}  # fmt: skip
        merge_spread(Path(output), {t: {**e, "provenance": provenance[t]} for t, e in tasks.items()})
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """The script's exit status: 0, or 2 after a one-line error (no file, or none with two seeds or more)."""
    p = argparse.ArgumentParser(prog="studies/stop_verdicts/spread.py", description=DESCRIPTION)
    p.add_argument("directory", nargs="?", default="studies/stop_verdicts", metavar="DIR",
                   help="the stop-verdict files (default studies/stop_verdicts)")  # fmt: skip
    p.add_argument("-o", "--output", default=None,
                   help="merge the tasks it lacks into this JSON (e.g. pebench/data/seed_spread.json)")  # fmt: skip
    args = p.parse_args(argv)
    try:
        return from_verdicts(args.directory, args.output)
    except PebenchError as err:
        print(f"spread.py: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
