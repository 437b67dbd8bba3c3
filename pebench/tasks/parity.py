"""Parity (regular): is the number of ones in a bit string odd?

Source: the "parity check" task of Delétang et al., "Neural Networks and the Chomsky Hierarchy", ICLR 2023,
arXiv:2207.02098 (protocol: :class:`~pebench.tasks.common.ChomskyTask`).

Definition. The task length ``n`` is the input length. Bits ``x_1 .. x_n`` are i.i.d. uniform over ``{0, 1}``; the
answer is the single token ``y = (x_1 + ... + x_n) mod 2``. Tokens: ``0``, ``1``, ``SEP = 2``, ``PAD = 3``.

    inputs  = x_1 .. x_n  SEP          targets = IGNORE x n  y        (n + 1 tokens)

With uniform bits, ``P(y = 1) = 1/2`` exactly for every ``n >= 1``: the classes are balanced, chance level 0.5.
"""

from __future__ import annotations

import torch

from pebench.tasks.base import Batch
from pebench.tasks.common import ChomskyTask, answer_layout
from pebench.tasks.registry import register

SEP, PAD = 2, 3


@register
class Parity(ChomskyTask):
    name = "parity"
    version = "1"
    description = "is the number of ones in n bits odd? (train n 1-40); per-token accuracy of the answer"
    pad_token = PAD

    @property
    def vocab_size(self) -> int:
        return 4

    @property
    def chance_level(self) -> float:
        return 0.5

    def tokens(self, length: int) -> int:
        return length + 1

    def sample(self, batch_size: int, length: int, generator: torch.Generator, split: str = "train") -> Batch:
        self.check_length(length)
        self.check_split(split)
        x = torch.randint(0, 2, (batch_size, length), generator=generator)
        return Batch(*answer_layout(x, x.sum(dim=1, keepdim=True).remainder(2), SEP))
