"""``pebench bench``: step throughput against Hugging Face Llama (:mod:`~pebench.bench.throughput`), and the wall
time and in-distribution verdicts of the suite's quick tier (:mod:`~pebench.bench.tasks`), and the verdicts of
models stopped when learned against their budget runs (:mod:`~pebench.bench.stopping`), and at one learning rate
against each cell's best (:mod:`~pebench.bench.lr_verdicts`)."""

from __future__ import annotations

import argparse
import shlex


def main(args: argparse.Namespace) -> int:
    """``--tasks``: per-task quick tier; otherwise step throughput, then the core quick tier with ``--quick-tier``."""
    from pebench.bench import tasks, throughput

    if getattr(args, "models_per_hour", False):
        from pebench.bench import scale

        return scale.main(args)
    if getattr(args, "lr_verdicts", None):
        from pathlib import Path

        from pebench.bench import lr_verdicts

        specs = [x for x in args.lr_verdicts.split(",") if x]  # URLs, or SQLite files' paths
        return lr_verdicts.main([x if "://" in x else f"sqlite:///{Path(x).resolve()}" for x in specs], args.base_lr)
    if getattr(args, "stop_verdicts", None):
        from pathlib import Path

        from pebench.bench import stopping

        names = tasks.resolve_names(args.stop_verdicts, "task")
        encs = tasks.resolve_names(args.encodings, "encoding") if args.encodings else list(tasks.CORE_ENCODINGS)
        return stopping.main(",".join(names), encs, args.k, Path(args.out))
    if getattr(args, "tasks", None):
        return tasks.main(args.tasks, args.encodings, shlex.split(args.suite_args or ""))
    status = throughput.main(args)
    if args.quick_tier:
        print(f"quick tier (pytest suite, defaults): {tasks.time_quick_tier():.0f} s")
    return status
