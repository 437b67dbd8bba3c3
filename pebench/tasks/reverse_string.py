"""Reverse: write the input string backwards after a separator.

Source: the algorithmic length-generalisation set of Kazemnejad et al., "The Impact of Positional Encoding on Length
Generalization in Transformers", NeurIPS 2023, arXiv:2305.19466; training and OOD lengths as set in this project's
issue 4 (reverse: train 3-8 items, OOD 9-16, plus 2x and 4x of 8).

Definition. The task length ``n`` is the number of items. Items ``x_1 .. x_n`` are i.i.d. uniform over
``0 .. N-1`` (``N`` = option ``n_items``, default 32); ``SEP = N``, ``PAD = N + 1`` (vocabulary ``N + 2``).

    inputs  = x_1 .. x_n  SEP  x_n .. x_2
    targets = IGNORE x n       x_n .. x_1          (2n tokens)

Metric: exact match of the answer. Chance level at the training maximum ``n = 8``: ``N^-8``.
"""

from __future__ import annotations

from typing import Any

import torch

from pebench.options import Option
from pebench.tasks.base import Batch
from pebench.tasks.common import RangeTrainedTask, algorithmic_lengths, answer_layout
from pebench.tasks.registry import register

TRAIN = (3, 8)
OOD = (9, 16)


@register
class Reverse(RangeTrainedTask):
    name = "reverse"
    version = "1"
    description = "reverse a string of n items after SEP (train n 3-8; OOD 9-16, 32); exact match"
    paper = "Kazemnejad et al. 2023, arXiv:2305.19466"
    options = {"n_items": Option(32, "number of distinct items N", type=int, low=2, high=100_000)}
    metric = "exact_match"
    train_min, train_length = TRAIN
    min_length = 1
    quick_lengths, full_lengths = algorithmic_lengths(TRAIN, OOD)

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.n_items = int(self.opts["n_items"])
        self.sep, self.pad_token = self.n_items, self.n_items + 1

    @property
    def vocab_size(self) -> int:
        return self.n_items + 2

    @property
    def chance_level(self) -> float:
        return float(self.n_items) ** -self.train_length

    def tokens(self, length: int) -> int:
        return 2 * length

    def sample(self, batch_size: int, length: int, generator: torch.Generator, split: str = "train") -> Batch:
        self.check_length(length)
        self.check_split(split)
        x = torch.randint(0, self.n_items, (batch_size, length), generator=generator)
        return Batch(*answer_layout(x, x.flip(1), self.sep))
