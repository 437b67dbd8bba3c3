"""Duplicate string (context-sensitive): output ``w w`` for an input bit string ``w``.

Source: the "duplicate string" task of Delétang et al., "Neural Networks and the Chomsky Hierarchy", ICLR 2023,
arXiv:2207.02098 (protocol: :class:`~pebench.tasks.common.ChomskyTask`).

Definition. The task length ``n`` is the input length. Bits ``w_1 .. w_n`` are i.i.d. uniform over ``{0, 1}``; the
answer is the ``2n`` tokens ``w_1 .. w_n w_1 .. w_n``. Tokens: ``0``, ``1``, ``SEP = 2``, ``PAD = 3``.

    inputs  = w  SEP  (w w)[:-1]          targets = IGNORE x n  w w        (3n tokens)

Metric: per-token accuracy over the ``2n`` output tokens; chance level 0.5.
"""

from __future__ import annotations

import torch

from pebench.tasks.base import Batch
from pebench.tasks.common import ChomskyTask, answer_layout
from pebench.tasks.registry import register

SEP, PAD = 2, 3


@register
class DuplicateString(ChomskyTask):
    name = "duplicate_string"
    version = "1"
    description = "write a string of n bits twice (train n 1-40); per-token accuracy of the 2n output tokens"
    pad_token = PAD

    @property
    def vocab_size(self) -> int:
        return 4

    @property
    def chance_level(self) -> float:
        return 0.5

    def tokens(self, length: int) -> int:
        return 3 * length

    def sample(self, batch_size: int, length: int, generator: torch.Generator, split: str = "train") -> Batch:
        self.check_length(length)
        self.check_split(split)
        w = torch.randint(0, 2, (batch_size, length), generator=generator)
        return Batch(*answer_layout(w, torch.cat([w, w], dim=1), SEP))
