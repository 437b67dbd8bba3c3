"""``pebench bench``, the speed benchmark: step throughput against Hugging Face Llama
(:mod:`~pebench.bench.throughput`), the wall time and in-distribution verdicts of the suite's quick tier
(:mod:`~pebench.bench.tasks`), and the cost of the mechanism diagnostics (:mod:`~pebench.bench.diagnostics`). It
prints to stdout and writes no file.

The measurements that decided the defaults (learning-rate verdicts, stop verdicts, the seed spread taken from them,
models per hour) are scripts under ``studies/`` in the repository, each README with the command that reproduces its
figures; ``pebench seed-spread`` (:mod:`pebench.analysis.spread`) measures the seed spread of a run."""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Callable


def count(minimum: int) -> Callable[[str], int]:
    """An argparse type: a whole number of at least ``minimum`` (steps, repeats, lengths), else a one-line error."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is below {minimum}")
        return value

    return parse


def main(args: argparse.Namespace) -> int:
    """``--tasks``: per-task quick tier; ``--diagnostics``: the diagnostics' cost (:mod:`~pebench.bench.diagnostics`);
    otherwise step throughput, then the core quick tier with ``--quick-tier``."""
    from pebench.bench import tasks, throughput

    if args.tasks:
        return tasks.main(args.tasks, args.encodings, shlex.split(args.suite_args or ""))
    if args.diagnostics:
        from pebench.bench import diagnostics

        return diagnostics.main(args)
    status = throughput.main(args)
    if args.quick_tier:
        print(f"quick tier (pytest suite, defaults): {tasks.time_quick_tier():.0f} s")
    return status
