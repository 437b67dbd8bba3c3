"""The training settings (:class:`TrainConfig`, :data:`PRECISIONS`), apart from the loop of
:mod:`pebench.engine.training` so that reading or declaring them (the command line's flags,
:mod:`pebench.engine.settings`) needs no torch."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from pebench.engine.stopping import STOP_RULES, StopRule, StopRuleName
from pebench.errors import ConfigError
from pebench.options import flag

PRECISIONS = ("fp32", "bf16", "tf32")
"""``fp32``: plain float32. ``bf16``: autocast to bfloat16 (weights, optimiser state and the loss stay float32).
``tf32``: float32 storage with TensorFloat-32 matmuls where the hardware has them (NVIDIA Ampere and later)."""


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation settings. ``curve_every`` 0 means about 20 learning-curve points per run. ``precision`` is one
    of :data:`PRECISIONS`; it is part of the stored configuration only when not ``fp32`` (so configurations, hashes
    and checkpoints from before the option are unchanged: no ``precision`` key means fp32). ``val_batches``:
    held-out batches per length at each learning-curve point (:class:`~pebench.engine.evaluation.Validation`; 0:
    none); it never changes the trained model, so it is not part of the stored configuration or its hash. ``stop``
    is one of :data:`pebench.engine.stopping.STOP_RULES` (:class:`~pebench.engine.stopping.StopRule`); stored as the
    rule with its thresholds unless ``budget``."""

    steps: int = 600
    batch_size: int = field(default=64, metadata=flag("training batch size", scopes=("sizes",)))
    lr: float = field(default=3e-3, metadata=flag("peak learning rate of AdamW"))
    weight_decay: float = field(default=0.01, metadata=flag("AdamW's decoupled weight decay"))
    warmup_steps: int = 50
    grad_clip: float = 1.0
    curve_every: int = 0
    precision: str = field(default="fp32", metadata=flag(
        "training precision: fp32, bf16 (autocast; weights, optimiser state and loss stay fp32), tf32 "
        "(TensorFloat-32 matmuls on GPUs that have them) or auto (bf16 on a CUDA GPU with native bfloat16, else "
        "fp32: on the CPUs measured bf16 was slower at the tasks' lengths, docs/defaults.md); the precision used is "
        "recorded in the configuration unless fp32", choices=(*PRECISIONS, "auto")))
    val_batches: int = field(default=2, metadata=flag(
        "held-out batches per length (the training length and 2x) evaluated at each learning-curve point; 0: none "
        "(never changes the trained model)", stored=False))
    stop: str = field(default=StopRuleName.BUDGET.value, metadata=flag(
        "when a model stops training: budget (the task's step count), learned (as soon as its training accuracy is "
        "at least 0.99 over the last 3 learning-curve points, else at the budget) or plateau (learned, or the "
        "training loss flat in the second half); part of the configuration (docs/defaults.md)", choices=STOP_RULES))

    def __post_init__(self) -> None:
        if self.steps <= 0:
            raise ConfigError("train", f"{{steps}} must be a positive integer, got {self.steps}")
        if self.batch_size <= 0:
            raise ConfigError("train", f"{{batch_size}} must be a positive integer, got {self.batch_size}")
        if not (self.lr > 0 and math.isfinite(self.lr)):
            raise ConfigError("train", f"{{lr}} must be a positive finite number, got {self.lr}")
        if not (self.weight_decay >= 0 and math.isfinite(self.weight_decay)):
            raise ConfigError("train", f"{{weight_decay}} must be 0 or more and finite, got {self.weight_decay}")
        if self.precision not in PRECISIONS:  # "auto" is resolved per device before (pebench.engine.device)
            raise ConfigError("train", f"{{precision}} must be one of {', '.join(PRECISIONS)}, got {self.precision!r}")
        if self.val_batches < 0:
            raise ConfigError("train", f"{{val_batches}} must be 0 or more, got {self.val_batches}")
        StopRule(self.stop)

    @property
    def stop_rule(self) -> StopRule:
        return StopRule(self.stop)

    @property
    def curve_interval(self) -> int:
        return self.curve_every or max(1, self.steps // 20)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        del d["val_batches"]
        if d["precision"] == "fp32":
            del d["precision"]
        del d["stop"]
        if (stop := self.stop_rule.to_dict()) is not None:
            d["stop"] = stop
        return d
