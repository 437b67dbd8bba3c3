"""Compute sqrt (context-sensitive): the floor of the square root of a big-endian binary number.

Source: the "compute sqrt" task of Delétang et al., "Neural Networks and the Chomsky Hierarchy", ICLR 2023,
arXiv:2207.02098 (protocol: :class:`~pebench.tasks.common.ChomskyTask`).

Definition. The task length ``n`` is the input length. A number ``v`` uniform over ``1 .. 2^n - 1`` is written in
big-endian binary with exactly ``n`` bits (leading zeros included); the answer is ``floor(sqrt(v))`` in big-endian
binary with exactly ``ceil(n / 2)`` bits (``floor(sqrt(v)) < 2^{ceil(n/2)}``, leading zeros included), as in the
paper. Tokens: ``0``, ``1``, ``SEP = 2``, ``PAD = 3``. Examples (the paper's, whose ``101`` for 6 is a typo):
``100101`` (37) -> ``110`` (6), ``111`` (7) -> ``10`` (2, in ``ceil(3 / 2) = 2`` bits).

    inputs  = bits(v)  SEP  bits(r)[:-1]          targets = IGNORE x n  bits(r)        (n + ceil(n/2) tokens)

Metric: per-token accuracy over the ``ceil(n / 2)`` output bits; chance level 0.5.

Defaults (version 2): training lengths 1..10 (``train_max=10``) and 1200 steps, so that the default model learns the
task in distribution (every core encoding does); at the papers' 1..40 with the global 600 steps RoPE did not learn it
(studies/task_defaults, "The ten tasks of issue 15 (version 2 defaults)"). The papers' protocol is
``--task-options compute_sqrt:train_max=40 --steps 600``.
"""

from __future__ import annotations

import math

import torch

from pebench.tasks.base import Batch
from pebench.tasks.common import ChomskyTask, list_layout, python_random, train_max_option
from pebench.tasks.registry import register

SEP, PAD = 2, 3


def big_endian(value: int, width: int) -> list[int]:
    """The ``width`` bits of ``0 <= value < 2^width``, most significant first."""
    return [(value >> i) & 1 for i in range(width - 1, -1, -1)]


@register
class ComputeSqrt(ChomskyTask):
    name = "compute_sqrt"
    version = "2"
    description = "floor of the square root of an n-bit big-endian number (train n 1-10; papers: 1-40); token accuracy"
    options = {"train_max": train_max_option(10)}
    default_steps = 1200
    pad_token = PAD

    @property
    def vocab_size(self) -> int:
        return 4

    @property
    def chance_level(self) -> float:
        return 0.5

    def answer_length(self, length: int) -> int:
        return -(-length // 2)

    def tokens(self, length: int) -> int:
        return length + self.answer_length(length)

    def sample(self, batch_size: int, length: int, generator: torch.Generator, split: str = "train") -> Batch:
        self.check_length(length)
        self.check_split(split)
        rng = python_random(generator)
        values = [rng.randint(1, 2**length - 1) for _ in range(batch_size)]
        prompts = [big_endian(v, length) for v in values]
        answers = [big_endian(math.isqrt(v), self.answer_length(length)) for v in values]
        return list_layout(prompts, answers, SEP, PAD, self.tokens(length))
