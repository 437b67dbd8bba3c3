"""Less noise per minute (issue 90): the lite tier's choices that trade minutes of training for agreement and for an
interval that covers a run as it was run, compared on the shipped reference.

    python studies/lite/seed_noise.py [--db sqlite:///pebench/data/reference.db] [--out studies/lite/seed_noise.md]

Four rules of choosing the tasks (:class:`pebench.analysis.lite_coverage.Choice`), each at run budgets of 8 to 24
minutes (a run's training: its seeds x ALiBi's stored minutes of the tasks, one thread, both learning rates; the
shipped tier's 15.9 took 7-8 min of wall time on 2 cores): the current rule (greedy on the map's leave-one-out
error, one seed); the same with each task's seed noise penalised (the error plus sum_t w_t^2 sigma_t^2 / n); two
seeds a run of fewer tasks (the budget pays for both); one seed of only the tasks whose seed spread is at most the
median. Every row is validated leaving each encoding out (:func:`pebench.analysis.lite_coverage.validate`): Kendall's
tau and the rank errors of the held-out predictions (from the reference's seed means, one seed for most encodings),
and the coverage of the stated 90% interval by the held-out multi-seed encodings' runs of the row's seed count.
Prints the table and writes it as markdown.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np

from pebench.analysis.lite_coverage import Choice, choose, validate

HERE = Path(__file__).resolve().parent

BUDGETS = (8.0, 10.0, 12.0, 16.0, 20.0, 24.0)
"""Run budgets tried: minutes of a run's training (seeds x ALiBi's minutes of the tasks)."""

CHOICES = (
    lambda b: Choice(b),
    lambda b: Choice(b, penalise=True),
    lambda b: Choice(b, seeds=2),
    lambda b: Choice(b, steady=True),
)
"""The rules compared, each as a function of the run budget."""

HEADER = ("| choice | budget | tasks | run min | tau | Spearman | rank error median / worst | <= 3 or in range "
          "| seed noise | interval width | coverage (runs) | map-only coverage | mutual |")  # fmt: skip


def study(name: str) -> ModuleType:
    """The study script ``name``.py beside this one, as a module (the study scripts are not a package)."""
    module_name = f"studies_lite_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # before running it: its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.0%}"


def row(choice: Choice, result: dict, minutes: float, tasks: list[str]) -> str:
    """One markdown row of the table."""
    return (f"| {choice.label} | {choice.budget:g} | {', '.join(tasks)} | {minutes:.1f} | {result['tau']:.3f} | "
            f"{result['spearman']:.3f} | {result['median_rank_error']:.0f} / {result['worst_rank_error']:.0f} | "
            f"{_pct(result['within_3_or_range'])} | {result['noise'] or 0:.3f} | {result['width'] or 0:.3f} | "
            f"{_pct(result['coverage'])} ({result['predictions']}) | {_pct(result['coverage_map_only'])} | "
            f"{_pct(result['coverage_mutual'])} |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default="sqlite:///pebench/data/reference.db")
    parser.add_argument("--out", type=Path, default=Path("studies/lite/seed_noise.md"))
    args = parser.parse_args()
    ref, seconds, ranges, _ = study("choose").reference(args.db)
    lines = [HEADER, "|" + "---|" * HEADER.count(" | ") + "---|"]
    print(HEADER)
    for make in CHOICES:
        for budget in BUDGETS:
            choice = make(budget)
            fold = choose(ref, np.arange(len(ref.table)), choice)
            tasks = [str(ref.table.columns[j]) for j in fold.order]
            minutes = choice.seeds * float(seconds.reindex(tasks).sum() / 60)
            lines.append(row(choice, validate(ref, choice, ranges), minutes, tasks))
            print(lines[-1], flush=True)
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
