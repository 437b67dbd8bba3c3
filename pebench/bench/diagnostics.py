"""``pebench bench --diagnostics [TASK]``: what the mechanism diagnostics cost on a default run (issue 89; target:
under 5% of a case's time; docs/diagnostics.md, "Cost").

For each encoding of ``--encoding``, on the task's default model and training configuration (untrained: the cost
does not depend on the weights), timed in one process and interleaved, so that drift affects all alike:

- one training step (:class:`~pebench.engine.training.SingleStep`: the task's batch at its training length, forward,
  backward, clipping, AdamW);
- :func:`~pebench.engine.diagnostics.case_diagnostics` of one result at 1x, 2x and 4x the training length (the quick
  tier's lengths), with the probe's sequences (:data:`~pebench.engine.diagnostics.PROBE_SEQUENCES`) and with the
  probe on the attention diagnostics' own sequences, to show the probe's share.

Medians of ``--repeats``. A case is one model evaluated at the three lengths: its diagnostics cost the sum of the
three; its share of the case is that sum over (the task's steps x one step + that sum), evaluation itself left out
(so the share is an upper bound). Only ratios measured side by side mean anything: keep the machine quiet."""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch

from pebench import encodings, tasks
from pebench.engine.diagnostics import PROBE_SEQUENCES, SEQUENCES, case_diagnostics
from pebench.engine.identity import encoding_context
from pebench.engine.settings import Settings
from pebench.engine.training import SingleStep
from pebench.models import Transformer

MULTIPLES = (1, 2, 4)


def _seconds(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def measure(encoding: str, task_name: str, repeats: int) -> dict[str, float]:
    """One encoding's medians (seconds): ``step``; ``diag_<m>x`` and ``diag_<m>x_small_probe`` at each multiple; and
    ``steps``, the task's training steps."""
    settings = Settings()
    task = tasks.build(task_name)
    cfg = settings.train_config(task)
    torch.manual_seed(0)
    model = Transformer(settings.model_config(task, encoding),
                        encodings.build(encoding, encoding_context(settings, task, encoding)))  # fmt: skip
    stepper = SingleStep(model, cfg)
    batch = task.sample_train(cfg.batch_size, torch.Generator().manual_seed(0))
    pos_gen = torch.Generator().manual_seed(1)
    device = torch.device("cpu")

    def step() -> None:
        model.train()
        stepper.step([batch], [pos_gen], cfg, device)

    timed: dict[str, Callable[[], object]] = {"step": step}
    for m in MULTIPLES:
        length = m * task.train_length
        timed[f"diag_{m}x"] = lambda n=length: case_diagnostics(model, task, n, 0)
        timed[f"diag_{m}x_small_probe"] = lambda n=length: case_diagnostics(model, task, n, 0,
                                                                            probe_sequences=SEQUENCES)  # fmt: skip
    for fn in timed.values():  # warm-up
        fn()
    samples: dict[str, list[float]] = {name: [] for name in timed}
    for _ in range(repeats):
        for name, fn in timed.items():
            samples[name].append(_seconds(fn))
    out = {name: statistics.median(values) for name, values in samples.items()}
    out["steps"] = float(cfg.steps)
    return out


def lines(encoding: str, m: dict[str, float]) -> str:
    """One encoding's row: a step, each length's diagnostics (in steps), the case's share with and without the
    probe's extra sequences."""
    case = sum(m[f"diag_{k}x"] for k in MULTIPLES)
    small = sum(m[f"diag_{k}x_small_probe"] for k in MULTIPLES)
    train = m["steps"] * m["step"]
    per = "  ".join(f"{m[f'diag_{k}x'] / m['step']:5.2f}" for k in MULTIPLES)
    return (f"{encoding:<16} {m['step'] * 1e3:8.1f}  {per}   {100 * case / (train + case):6.2f}%  "
            f"{100 * small / (train + small):6.2f}%")


def main(args: argparse.Namespace) -> int:
    """Print one row per encoding of ``args.encoding`` on the task ``args.diagnostics``."""
    from pebench.bench.throughput import encoding_names

    names = encoding_names(args.encoding)
    task = tasks.build(args.diagnostics)
    steps = Settings().train_config(task).steps
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, cpu; task {task.name} (training length "
          f"{task.train_length}, {steps} steps a case), default model; medians of {args.repeats}; diagnostics on "
          f"{SEQUENCES} sequences a length, the probe fitted on {PROBE_SEQUENCES} (small probe: on {SEQUENCES})")
    print("columns: ms per training step; the diagnostics of one result at 1x, 2x and 4x, in training steps; their "
          "share of a case (three results); the same with the small probe")
    for name in names:
        print(lines(name, measure(name, task.name, args.repeats)), flush=True)
    return 0
