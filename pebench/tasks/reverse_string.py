"""Reverse: write the input string backwards after a separator.

Source: the algorithmic length-generalisation set of Kazemnejad et al., "The Impact of Positional Encoding on Length
Generalization in Transformers", NeurIPS 2023, arXiv:2305.19466; training and OOD lengths of the published study this
set follows (reverse: train 3-8 items, OOD 9-16, plus 2x and 4x of 8).

Definition. The task length ``n`` is the number of items. Items ``x_1 .. x_n`` are i.i.d. uniform over
``0 .. N-1`` (``N`` = option ``n_items``, default 32); ``SEP = N``, ``PAD = N + 1`` (vocabulary ``N + 2``).

    inputs  = x_1 .. x_n  SEP  x_n .. x_2
    targets = IGNORE x n       x_n .. x_1          (2n tokens)

Metric: exact match of the answer. Chance level at the training maximum ``n = 8``: ``N^-8``.
"""

from __future__ import annotations

import torch

from pebench.tasks.common import ItemStringTask, algorithmic_lengths
from pebench.tasks.registry import register

TRAIN = (3, 8)
OOD = (9, 16)


@register
class Reverse(ItemStringTask):
    name = "reverse"
    version = "1"
    description = "reverse a string of n items after SEP (train n 3-8; OOD 9-16, 32); exact match"
    paper = "Kazemnejad et al. 2023, arXiv:2305.19466"
    train_min, train_length = TRAIN
    quick_lengths, full_lengths = algorithmic_lengths(TRAIN, OOD)

    def answer(self, items: torch.Tensor) -> torch.Tensor:
        return items.flip(1)
