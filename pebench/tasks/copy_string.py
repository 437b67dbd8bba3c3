"""Copy: repeat the input string after a separator.

Source: the algorithmic length-generalisation set (copy, reverse, sort, addition) of Kazemnejad et al., "The Impact
of Positional Encoding on Length Generalization in Transformers", NeurIPS 2023, arXiv:2305.19466; training and OOD
lengths of the published study this set follows (copy: train 4-12 items, OOD 13-20, plus 2x and 4x of 12).

Definition. The task length ``n`` is the number of items. Items ``x_1 .. x_n`` are i.i.d. uniform over
``0 .. N-1`` (``N`` = option ``n_items``, default 32); ``SEP = N``, ``PAD = N + 1`` (vocabulary ``N + 2``).

    inputs  = x_1 .. x_n  SEP  x_1 .. x_{n-1}
    targets = IGNORE x n       x_1 .. x_n          (2n tokens)

Metric: exact match of the answer (all ``n`` answer tokens right). Chance level at the training maximum ``n = 12``:
a predictor uniform over the ``N^n`` possible answers, ``N^-12``.
"""

from __future__ import annotations

import torch

from pebench.tasks.common import ItemStringTask, algorithmic_lengths
from pebench.tasks.registry import register

TRAIN = (4, 12)
OOD = (13, 20)


@register
class Copy(ItemStringTask):
    name = "copy"
    version = "1"
    description = "repeat a string of n items after SEP (train n 4-12; OOD 13-20, 24, 48); exact match"
    paper = "Kazemnejad et al. 2023, arXiv:2305.19466"
    train_min, train_length = TRAIN
    quick_lengths, full_lengths = algorithmic_lengths(TRAIN, OOD)

    def answer(self, items: torch.Tensor) -> torch.Tensor:
        return items.clone()
