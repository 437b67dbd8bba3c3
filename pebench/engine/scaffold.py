"""The seed study's scaffold runs (issue 88; seed study 003): is a positional encoding a scaffold that can be dropped
once training is under way? ``--scaffold f`` takes each model's checkpoint at the fraction ``f`` of its budget,
converts it to NoPE and continues it with a fresh schedule for the rest of the budget.

Seed study 003 (after DroPE, Sakana AI 2025, arXiv:2512.12167) trains RoPE, YaRN and PoPE models for 16,000 steps
(3e-4 to 3e-5, cosine), takes their checkpoints at 10,000 and 15,000 steps (``f`` = 0.625 and 0.9375), drops the
positional encoding and continues for the remaining 6,000 and 1,000 steps with fresh cosine schedules at lower peak
rates (1e-4 and 5e-5) and warm-ups of 180 and 30 steps (3 % of the rest). Scaled to pebench's budgets ``S``:

1. **the checkpoint**: the case's model trained with its own schedule for ``round(f * S)`` of its ``S`` steps (the
   same weights as the full run's at that step: one seed, one data stream), cached as a model of its own;
2. **the conversion**: the same transformer with NoPE in place of its encoding (the encoding's own parameters, if any,
   are dropped; the depth stays the base model's);
3. **the rest**: ``S - round(f * S)`` steps on the scaffold's own data stream, a fresh linear warm-up over 3 % of them
   and a cosine decay from the base schedule's rate at the switch (:func:`pebench.engine.training.lr_at` at step
   ``round(f * S)``: with a peak of 3e-4 and pebench's 50 warm-up steps, 1.14e-4 at the study's 10,000 of 16,000
   steps, where it chose 1e-4, and 3.3e-5 at 15,000, where it chose 5e-5: the study's values to within their rounding,
   derived here for any ``f``).

Stored at the point ``scaffold0.625`` (the base encoding's name, evaluated at the quick tier's lengths), never ranked
with the from-scratch protocol; the configuration holds the scaffold (``config["scaffold"]``) so such models have their
own keys, and ``--reuse``, currency and ``pebench rebuild`` treat them as any other.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pebench.engine.settings import Settings
from pebench.engine.sweep import Axis
from pebench.engine.train_config import TrainConfig
from pebench.tasks.base import Task

AXIS = "scaffold"
TARGET = "nope"
"""The encoding the checkpoint is converted to."""
WARMUP_FRACTION = 0.03
STREAM = "scaffold"


def axis(fraction: float) -> Axis:
    """The sweep axis of ``--scaffold fraction``: one value, written as given (``scaffold0.625``), setting
    :attr:`Settings.scaffold <pebench.engine.settings.Settings.scaffold>`."""
    return Axis(AXIS, "scaffold", "setting", "", (float(fraction),), (f"{fraction:g}",))


def switch_step(settings: Settings, task: Task) -> int:
    """The step of the checkpoint: ``round(f * S)``, at least 1 and at most ``S - 1``."""
    steps = settings.train_config(task).steps
    return min(steps - 1, max(1, round(settings.scaffold * steps)))  # type: ignore[operator]


def rest_config(settings: Settings, task: Task) -> TrainConfig:
    """The continuation's training configuration: the rest of the budget, a fresh 3 % warm-up, the base schedule's
    rate at the switch as its peak, to the budget."""
    from pebench.engine.training import lr_at

    base = settings.train_config(task)
    at = switch_step(settings, task)
    rest = base.steps - at
    return replace(base, steps=rest, lr=lr_at(at, base), warmup_steps=max(1, round(WARMUP_FRACTION * rest)),
                   stop="budget")  # fmt: skip


def config(settings: Settings, task: Task) -> dict[str, Any]:
    """The scaffold as the stored configuration holds it (``config["scaffold"]``)."""
    cfg = rest_config(settings, task)
    return {"fraction": settings.scaffold, "switch_step": switch_step(settings, task), "to": TARGET,
            "steps": cfg.steps, "lr": cfg.lr, "warmup_steps": cfg.warmup_steps}  # fmt: skip
