"""``pebench bench --tasks`` and ``--quick-tier``: wall time of the suite's quick tier, per task or for the core set.

``--tasks T1,T2|all`` times each task's quick tier on its own (the five core encodings unless ``--encodings`` says
otherwise; fresh cache, temporary database), then prints its wall time and, per encoding, the in-distribution score
(at the training length) with the verdict of :func:`pebench.analysis.scoring.learned_verdict`: *learned* when the
normalised score (:meth:`pebench.metrics.Metric.normalise`; for perplexity in log space) is at least 0.5, *partly*
from 0.1, else *not learned*.

``--quick-tier`` times the core quick tier (5 encodings x 4 tasks x 3 lengths, default settings) the same way.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pebench.analysis.scoring import Learned, training_length_scores
from pebench.analysis.spread import CORE_ENCODINGS

CORE_TASKS = ("modular_sum", "k_back", "shift_invariant", "long_range_match")


def run_suite(tasks: Sequence[str], encs: Sequence[str], tmp: str, extra: Sequence[str] = ()) -> float:
    """Run the quick tier of ``tasks`` x ``encs`` in a pytest subprocess with a fresh cache under ``tmp`` and the
    database ``tmp/bench.db``; return its wall time. Failing cases (exit status 1) are reported by pytest and counted
    in the time; any other exit status stops the benchmark."""
    root = Path(__file__).resolve().parents[2]
    cmd = [sys.executable, "-m", "pytest", str(root / "suite"), "-q", "-p", "no:cacheprovider",
           "--db", f"sqlite:///{tmp}/bench.db", "--cache-dir", f"{tmp}/cache",
           "--encoding", ",".join(encs), "--task", ",".join(tasks), *extra]  # fmt: skip
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=root, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"quick tier of {','.join(tasks)} failed with exit status {proc.returncode}")
    return elapsed


def time_quick_tier() -> float:
    """Wall time of the core quick tier (5 encodings x 4 tasks x 3 lengths) at the defaults, fresh cache, temporary
    database."""
    with tempfile.TemporaryDirectory() as tmp:
        return run_suite(CORE_TASKS, CORE_ENCODINGS, tmp)


def time_tasks(tasks: Sequence[str], encs: Sequence[str], extra: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Each task's quick tier on its own (fresh cache, temporary database): ``{"task", "wall_s", "rows"}``."""
    from pebench.analysis.lr import at_chosen_rates
    from pebench.store.load import load

    out = []
    for task in tasks:
        with tempfile.TemporaryDirectory() as tmp:
            wall = run_suite([task], encs, tmp, ["--benchmark-disable", *extra])  # no timing table per task
            url = f"sqlite:///{tmp}/bench.db"  # at the default protocol, each cell at its chosen rate
            rows = training_length_scores(at_chosen_rates(url, load(url)), task)
            out.append({"task": task, "wall_s": wall, "rows": rows})
        print(format_task_table(out[-1:], encs, header=len(out) == 1), flush=True)
    return out


def format_task_table(results: list[dict[str, Any]], encs: Sequence[str], header: bool = True) -> str:
    """``task  wall  metric  chance  <score per encoding>`` lines; each score is followed by ``L`` (learned),
    ``p`` (partly), ``-`` (not learned); ``n/a`` marks an encoding without a result, ``x`` a failed one."""
    mark = {Learned.LEARNED: "L", Learned.PARTLY: "p", Learned.NOT_LEARNED: "-", Learned.FAILED: "x"}
    lines = []
    if header:
        lines.append(f"{'task':<19}{'wall':>7}  {'metric':<12}{'chance':>8}" + "".join(f"{e:>13}" for e in encs))
    for res in results:
        by_enc = {r["encoding"]: r for r in res["rows"]}
        metric = next((r["metric"] for r in res["rows"] if "metric" in r), "?")
        chance = next((r["chance"] for r in res["rows"]), float("nan"))
        cells = []
        for e in encs:
            r = by_enc.get(e)
            if r is None:
                cells.append("n/a")
            else:
                cells.append("failed x" if r["score"] is None else f"{r['score']:.3g} {mark[r['verdict']]}")
        head = f"{res['task']:<19}{res['wall_s']:>6.0f}s  {metric:<12}{chance:>8.3g}"
        lines.append(head + "".join(f"{c:>13}" for c in cells))
    return "\n".join(lines)


def resolve_names(spec: str, kind: str) -> list[str]:
    """A comma-separated list of registered task or encoding names, or ``all``; an unknown name is a one-line
    error that lists the valid ones."""
    from pebench import encodings as enc_registry
    from pebench import tasks as task_registry
    from pebench.registry import parse_names

    registry = task_registry if kind == "task" else enc_registry
    if spec.strip() == "all":
        return registry.available()
    return parse_names(spec, registry.get, kind, registry.available())


def main(tasks_spec: str, encodings_spec: str | None, suite_args: Sequence[str]) -> int:
    """Time each task of ``tasks_spec`` and print its row."""
    tasks = resolve_names(tasks_spec, "task")
    encs = resolve_names(encodings_spec or ",".join(CORE_ENCODINGS), "encoding")
    print(f"quick tier per task, encodings {','.join(encs)}; score at the training length "
          f"(L learned, p partly, - not learned)")  # fmt: skip
    results = time_tasks(tasks, encs, suite_args)
    print(f"total {sum(r['wall_s'] for r in results):.0f} s")
    return 0
