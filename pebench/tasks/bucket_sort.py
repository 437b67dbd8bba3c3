"""Bucket sort (context-sensitive): sort a string over a 5-symbol alphabet.

Source: the "bucket sort" task of Delétang et al., "Neural Networks and the Chomsky Hierarchy", ICLR 2023,
arXiv:2207.02098 (protocol: :class:`~pebench.tasks.common.ChomskyTask`).

Definition. The task length ``n`` is the input length. Symbols ``x_1 .. x_n`` are i.i.d. uniform over ``0 .. 4``
(repeats allowed); the answer is the ``n`` symbols in non-decreasing order. Tokens: ``0 .. 4``, ``SEP = 5``,
``PAD = 6``.

    inputs  = x  SEP  sorted(x)[:-1]          targets = IGNORE x n  sorted(x)        (2n tokens)

Metric: per-token accuracy over the ``n`` output tokens; chance level 1/5.
"""

from __future__ import annotations

import torch

from pebench.tasks.base import Batch
from pebench.tasks.common import ChomskyTask, answer_layout
from pebench.tasks.registry import register

N_SYMBOLS = 5
SEP, PAD = 5, 6


@register
class BucketSort(ChomskyTask):
    name = "bucket_sort"
    version = "1"
    description = "sort n symbols over a 5-letter alphabet (train n 1-40); per-token accuracy of the output"
    pad_token = PAD

    @property
    def vocab_size(self) -> int:
        return 7

    @property
    def chance_level(self) -> float:
        return 1.0 / N_SYMBOLS

    def tokens(self, length: int) -> int:
        return 2 * length

    def sample(self, batch_size: int, length: int, generator: torch.Generator, split: str = "train") -> Batch:
        self.check_length(length)
        self.check_split(split)
        x = torch.randint(0, N_SYMBOLS, (batch_size, length), generator=generator)
        return Batch(*answer_layout(x, x.sort(dim=1).values, SEP))
