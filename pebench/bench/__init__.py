"""``pebench bench``: step throughput against Hugging Face Llama (:mod:`~pebench.bench.throughput`), and the wall
time and in-distribution verdicts of the suite's quick tier (:mod:`~pebench.bench.tasks`)."""

from __future__ import annotations

import argparse
import shlex


def main(args: argparse.Namespace) -> int:
    """``--tasks``: per-task quick tier; otherwise step throughput, then the core quick tier with ``--quick-tier``."""
    from pebench.bench import tasks, throughput

    if getattr(args, "models_per_hour", False):
        from pebench.bench import scale

        return scale.main(args)
    if getattr(args, "tasks", None):
        return tasks.main(args.tasks, args.encodings, shlex.split(args.suite_args or ""))
    status = throughput.main(args)
    if args.quick_tier:
        print(f"quick tier (pytest suite, defaults): {tasks.time_quick_tier():.0f} s")
    return status
