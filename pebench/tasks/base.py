"""What every task declares and how it produces batches.

A task generates ``(inputs, targets)`` from a :class:`torch.Generator`; targets hold :data:`IGNORE` where a position
is not scored. It declares its vocabulary size, training length, evaluation lengths per tier, metric (a name from
:mod:`pebench.metrics`, which says what the score means), chance level and a version string (bump it whenever the
generator changes so old results are not mixed with new ones).

Annotations. A task may hand the model per-token integer annotations with each batch (:attr:`Batch.annotations`,
``(B, T)`` int64, 0 at padding), named in its :attr:`Task.annotations`; an encoding that needs some
(:attr:`pebench.encodings.base.PositionalEncoding.needs`) runs only on tasks that provide them. The names, each
defined once here (:data:`ANNOTATIONS`):

* :data:`DIGIT_INDEX` ``"digit_index"`` -- the 1-based index of a digit within its number as written (1 = the
  number's first digit in the sequence), 0 for every token that is not a digit (McLeish et al., "Transformers Can Do
  Arithmetic with the Right Embeddings", NeurIPS 2024, arXiv:2405.17399: Abacus embeddings);
* :data:`COUPLED_POSITION` ``"coupled_position"`` -- Cho et al.'s coupled position id ("Position Coupling: Improving
  Length Generalization of Arithmetic Transformers Using Task Structure", NeurIPS 2024, arXiv:2405.20671): tokens
  that play the same part in the task (digits of equal significance in the operands and the answer) share one id,
  the first id is 1, and 0 marks tokens without one (padding). The rule of each task is in its docstring
  (:func:`pebench.tasks.common.addition_annotations` for the additions).

Every batch of such a task carries them, in training and at evaluation, with the shape of ``inputs``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import Tensor

from pebench import metrics
from pebench.case import TIERS
from pebench.errors import LengthError
from pebench.options import Option, resolve

IGNORE = -100
"""Target value of unscored positions (the default ``ignore_index`` of :func:`torch.nn.functional.cross_entropy`)."""

DIGIT_INDEX = "digit_index"
"""Annotation: 1-based index of a digit within its number as written, 0 for non-digits (see the module docstring)."""
COUPLED_POSITION = "coupled_position"
"""Annotation: Cho et al.'s coupled position id, 1 and up; 0 for padding (see the module docstring)."""
ANNOTATIONS: dict[str, str] = {
    DIGIT_INDEX: "1-based index of a digit within its number as written; 0 for non-digits (Abacus embeddings)",
    COUPLED_POSITION: "position id shared by the digits of equal significance in operands and answer (position "
    "coupling); 0 for padding",
}
"""Every annotation name a task may provide, with a one-line description."""


@dataclass
class Batch:
    """``inputs`` and ``targets`` are ``(B, T)`` int64 tensors; ``positions`` overrides 0..T-1 when set;
    ``annotations`` are the task's per-token annotations, name -> ``(B, T)`` int64 (see the module docstring)."""

    inputs: Tensor
    targets: Tensor
    positions: Tensor | None = None
    annotations: dict[str, Tensor] | None = None

    def to(self, device: torch.device | str) -> Batch:
        pos = None if self.positions is None else self.positions.to(device)
        ann = None if self.annotations is None else {k: v.to(device) for k, v in self.annotations.items()}
        return Batch(self.inputs.to(device), self.targets.to(device), pos, ann)


class Task:
    """Base class of every task. Subclasses set the class attributes and implement :meth:`sample`."""

    name: ClassVar[str] = ""
    version: ClassVar[str] = "1"
    description: ClassVar[str] = ""
    paper: ClassVar[str] = ""
    options: ClassVar[dict[str, Option]] = {}
    metric: ClassVar[str] = "accuracy"
    """Name of the task's metric in :mod:`pebench.metrics` (direction, display and normalisation come from there)."""
    eval_splits: ClassVar[tuple[str, ...]] = ("test",)
    """Evaluation splits; the first is the primary one whose metrics fill a result's main columns."""

    train_length: int = 64
    """Length of training sequences (set per instance from options by tasks that make it configurable)."""

    min_length: int = 2
    """Shortest sequence the task can produce."""

    default_steps: ClassVar[int | None] = None
    """Training steps this task needs at the default model when the user gives no ``--steps`` (None: global)."""

    annotations: ClassVar[frozenset[str]] = frozenset()
    """Names (keys of :data:`ANNOTATIONS`) of the per-token annotations every batch of this task carries in
    :attr:`Batch.annotations` (training and evaluation); documented in the task's docstring."""

    def __init__(self, **options: Any) -> None:
        self.opts: dict[str, Any] = resolve(f"task {self.name}", self.options, options)

    # -- declarations ------------------------------------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        raise NotImplementedError

    @property
    def chance_level(self) -> float:
        """Expected score of a predictor that ignores the input (uniform over the possible answers)."""
        raise NotImplementedError

    @property
    def train_range(self) -> tuple[int, int]:
        """Shortest and longest training length (both ``train_length`` unless the task trains on a range)."""
        return self.train_length, self.train_length

    @property
    def higher_is_better(self) -> bool:
        return metrics.get(self.metric).higher_is_better

    def score(self, result: dict[str, float]) -> float:
        """The task's metric picked out of an :func:`~pebench.engine.evaluation.evaluate` result."""
        return float(result[metrics.get(self.metric).key])

    def tokens(self, length: int) -> int:
        """Number of tokens of a sequence at task length ``length`` (default: the length itself)."""
        return length

    def eval_lengths(self, tier: str = "quick") -> list[int]:
        """Quick tier: the training length, 2x and 4x. Full tier adds 8x and 16x."""
        check_tier(tier)
        factors = (1, 2, 4) if tier == "quick" else (1, 2, 4, 8, 16)
        return [self.train_length * f for f in factors]

    def max_length(self) -> int:
        """Most tokens of a sequence at any length any tier evaluates (absolute tables are sized for it)."""
        return max(self.tokens(n) for t in TIERS for n in self.eval_lengths(t))

    def check_length(self, length: int) -> None:
        """Raise :class:`LengthError` when the task cannot produce sequences of ``length``."""
        if not isinstance(length, int) or isinstance(length, bool):
            raise LengthError(f"task {self.name}: length must be an integer, got {length!r}")
        if length < self.min_length:
            raise LengthError(f"task {self.name}: length {length} is too short; valid lengths: >= {self.min_length}")

    def config(self) -> dict[str, Any]:
        """Everything that identifies this task's data (stored with results and hashed)."""
        return {"name": self.name, "version": self.version, "options": dict(self.opts)}

    # -- data --------------------------------------------------------------------------------------------------
    def sample(self, batch_size: int, length: int, generator: torch.Generator, split: str = "train") -> Batch:
        """A batch of ``batch_size`` sequences at task length ``length`` (``tokens(length)`` tokens each).

        ``split`` is "train" or an eval split.
        """
        raise NotImplementedError

    def eval_batches(
        self, length: int, n_samples: int, generator: torch.Generator, split: str, batch_size: int
    ) -> Iterator[Batch]:
        """The evaluation batches of ``n_samples`` sequences (default: repeated :meth:`sample`).

        Tasks whose evaluation is not a set of independent samples (sliding windows over a text) override this.
        """
        remaining = n_samples
        while remaining > 0:
            b = min(batch_size, remaining)
            yield self.sample(b, length, generator, split)
            remaining -= b

    def sample_train(self, batch_size: int, generator: torch.Generator) -> Batch:
        """A training batch (default: ``sample`` at the training length)."""
        return self.sample(batch_size, self.train_length, generator, "train")

    def check_split(self, split: str) -> None:
        if split != "train" and split not in self.eval_splits:
            valid = ", ".join(("train", *self.eval_splits))
            raise ValueError(f"task {self.name}: unknown split {split!r}; valid splits: {valid}")


def check_tier(tier: str) -> None:
    if tier not in TIERS:
        raise ValueError(f"unknown tier {tier!r}; valid tiers: {', '.join(TIERS)}")
