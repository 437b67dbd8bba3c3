"""Models per hour: what a run costs at scale, and whether packing seeds pays (docs/scale-out.md, docs/speed.md).

    python studies/scale/models_per_hour.py [--task k_back] [--encoding rope] [--k 3] [--train-steps N] [--device D]

For one task and encoding (default k_back, rope, at their defaults), trains and evaluates the task's quick tier
(every quick-tier length of each model) in this process, three ways, and prints models per hour:

* K = 1: one seed alone;
* K seeds one by one (``--k``, default 3), as ``pytest suite --seeds K --pack off`` does;
* K seeds packed into one batched model (:mod:`pebench.engine.packing`), as ``pytest suite --seeds K --pack on``
  does (``--pack auto`` packs on a GPU only).

The three are measured one after the other in one process with no cache (a fresh :class:`~pebench.engine.runner.Runner`
each), so they see the same machine state. On CUDA it also prints the peak GPU memory of each way and, when the
NVIDIA management library is installed, the GPU's utilisation sampled during the packed run; from the packed rate it
projects the time of the full quick grid (every encoding x every task, ``--seeds`` seeds) on this device, using each
task's step count and length relative to the measured one (:func:`grid_projection`).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import torch

from pebench import encodings, tasks
from pebench.case import Case
from pebench.engine.device import pick_device
from pebench.engine.runner import Runner
from pebench.engine.settings import Settings
from pebench.status import ResultStatus


def _utilisation_sampler(device: torch.device) -> tuple[threading.Event, list[int]] | None:
    """Samples ``torch.cuda.utilization`` every 0.2 s into a list until the event is set (None: unavailable)."""
    if device.type != "cuda":
        return None
    try:
        torch.cuda.utilization(device)
    except Exception:  # pynvml missing or unsupported
        return None
    stop, samples = threading.Event(), []

    def loop() -> None:
        while not stop.is_set():
            samples.append(int(torch.cuda.utilization(device)))
            time.sleep(0.2)

    threading.Thread(target=loop, daemon=True).start()
    return stop, samples


def time_way(settings: Settings, encoding: str, task: str, seeds: int) -> dict[str, Any]:
    """Train and evaluate the quick tier of ``seeds`` models of (encoding, task) with ``settings``; wall time, models
    per hour and (on CUDA) peak memory."""
    runner = Runner(settings)
    device = runner.device
    lengths = runner.task(task).eval_lengths("quick")
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
    sampler = _utilisation_sampler(device) if settings.pack_seeds > 1 else None
    start = time.perf_counter()
    statuses = []
    for seed in range(seeds):
        for length in lengths:
            statuses.append(runner.run(Case(encoding, task, length, seed)).status)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    wall = time.perf_counter() - start
    row: dict[str, Any] = {"models": seeds, "wall_s": wall, "models_per_hour": seeds * 3600 / wall,
                           "ok": statuses.count(ResultStatus.OK), "cases": len(statuses)}  # fmt: skip
    if device.type == "cuda":
        row["peak_memory_mib"] = torch.cuda.max_memory_allocated(device) / 2**20
    if sampler is not None:
        stop, samples = sampler
        stop.set()
        row["gpu_utilisation_pct"] = sum(samples) / max(len(samples), 1)
    return row


def grid_projection(measured: Settings, measured_task: str, seconds_per_model: float) -> float:
    """Seconds for the whole quick grid at the defaults (every encoding x every task it applies to, one seed) from
    ``seconds_per_model`` measured on ``measured_task`` with the settings ``measured``: each task is scaled by its
    default training tokens (steps x longest training sequence) relative to the measured model's. Rough: attention
    cost grows faster than linearly with length, and evaluation is counted as in the measured task."""
    base = tasks.build(measured_task)
    base_tokens = measured.train_config(base).steps * base.max_length()
    total = 0.0
    for name in tasks.available():
        task = tasks.build(name)
        runs = sum(encodings.not_applicable(e, task) is None for e in encodings.available())  # skipped: free
        total += runs * seconds_per_model * Settings().train_config(task).steps * task.max_length() / base_tokens
    return total


def run(args: argparse.Namespace) -> int:
    """Print models per hour for K = 1, K one by one and K packed, and on CUDA memory, utilisation and the grid."""
    device = pick_device(args.device)
    k = args.k
    base = Settings(steps=args.train_steps, device=str(device), cache_dir=None, progress=False)
    encodings.get(args.encoding), tasks.get(args.task)  # one-line errors for unknown names
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, device {device}; {args.encoding} on "
          f"{args.task} (quick tier, {base.train_config(tasks.build(args.task)).steps} steps), no cache")  # fmt: skip
    ways = [("K=1", replace(base, pack_seeds=1), 1), (f"K={k} one by one", replace(base, pack_seeds=1), k),
            (f"K={k} packed", replace(base, pack_seeds=k), k)]  # fmt: skip
    rows = {}
    for label, settings, seeds in ways:
        rows[label] = row = time_way(settings, args.encoding, args.task, seeds)
        extra = "".join(f", {key} {row[key]:.0f}" for key in ("peak_memory_mib", "gpu_utilisation_pct") if key in row)
        print(f"{label:<18} {row['wall_s']:8.1f} s  {row['models_per_hour']:8.0f} models/h  "
              f"({row['ok']}/{row['cases']} cases ok{extra})", flush=True)  # fmt: skip
    one, packed = rows[f"K={k} one by one"], rows[f"K={k} packed"]
    print(f"packed / one by one: {packed['models_per_hour'] / one['models_per_hour']:.2f}x models per hour")
    best = "packed" if packed["models_per_hour"] >= one["models_per_hour"] else "one by one"
    per_model = 3600 / max(packed["models_per_hour"], one["models_per_hour"])
    grid = grid_projection(base, args.task, per_model) * k
    print(f"projected quick grid ({len(encodings.available())} encodings x {len(tasks.available())} tasks x {k} "
          f"seeds, {best}) on this device: {grid / 60:.0f} min (rough: scaled by training tokens)")  # fmt: skip
    return 0


def parser() -> argparse.ArgumentParser:
    """The script's command-line options."""
    from pebench.engine.settings import add_flags

    p = argparse.ArgumentParser(prog="studies/scale/models_per_hour.py", description=__doc__.splitlines()[0])
    p.add_argument("--task", default="k_back", help="the task whose quick tier is trained (default k_back)")
    p.add_argument("--encoding", default="rope", help="the encoding trained (default rope)")
    p.add_argument("--k", type=int, default=3, metavar="K", help="seeds per model (default 3)")
    p.add_argument("--train-steps", type=int, default=None, help="training steps (default: the task's own)")
    add_flags(p.add_argument, ["device"], device={"default": "cpu", "help": "cpu (default), cuda, cuda:N, mps or auto"})
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """The script's exit status: 0, or 2 after a one-line error (an unknown task or encoding)."""
    from pebench.errors import PebenchError

    args = parser().parse_args(argv)
    try:
        return run(args)
    except PebenchError as err:
        print(f"models_per_hour.py: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
