"""Sort: output the input's distinct items in increasing order.

Source: the algorithmic length-generalisation set of Kazemnejad et al., "The Impact of Positional Encoding on Length
Generalization in Transformers", NeurIPS 2023, arXiv:2305.19466; training and OOD lengths of the published study this
set follows (sort: train 3-6 items, OOD 7-10, plus 2x and 4x of 6).

Definition. The task length ``n`` is the number of items. The items are ``n`` *distinct* tokens drawn uniformly
without replacement from ``0 .. N-1`` (``N`` = option ``n_items``, default 32, so ``n <= N``) in random order;
``SEP = N``, ``PAD = N + 1`` (vocabulary ``N + 2``).

    inputs  = x_1 .. x_n  SEP  s_1 .. s_{n-1}
    targets = IGNORE x n       s_1 .. s_n          with s = sorted(x), s_1 < s_2 < ... < s_n   (2n tokens)

Metric: exact match of the answer. Chance level at the training maximum ``n = 6``: a predictor uniform over the
``N! / (N-6)!`` sequences of 6 distinct items, ``(N-6)! / N!``.
"""

from __future__ import annotations

import math

import torch

from pebench.errors import LengthError
from pebench.options import Option
from pebench.tasks.common import ItemStringTask, algorithmic_lengths
from pebench.tasks.registry import register

TRAIN = (3, 6)
OOD = (7, 10)


@register
class Sort(ItemStringTask):
    name = "sort"
    version = "1"
    description = "sort n distinct items after SEP (train n 3-6; OOD 7-10, 12, 24); exact match"
    paper = "Kazemnejad et al. 2023, arXiv:2305.19466"
    options = {"n_items": Option(32, "number of distinct items N (>= the longest length, 24)", type=int, low=24,
                                 high=100_000)}  # fmt: skip
    train_min, train_length = TRAIN
    quick_lengths, full_lengths = algorithmic_lengths(TRAIN, OOD)

    @property
    def chance_level(self) -> float:
        return 1.0 / math.perm(self.n_items, self.train_length)

    def check_length(self, length: int) -> None:
        super().check_length(length)
        if length > self.n_items:
            raise LengthError(
                f"task {self.name}: length {length} needs more than n_items={self.n_items} distinct items; "
                f"valid lengths: {self.min_length}..{self.n_items}"
            )

    def draw(self, batch_size: int, length: int, generator: torch.Generator) -> torch.Tensor:
        # n distinct items per row: the first n of a uniformly random permutation (argsort of uniform noise)
        return torch.rand(batch_size, self.n_items, generator=generator).argsort(dim=1)[:, :length]

    def answer(self, items: torch.Tensor) -> torch.Tensor:
        return items.sort(dim=1).values
