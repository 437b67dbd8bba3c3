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

from torch import Tensor

from pebench.tasks.common import SymbolStringTask
from pebench.tasks.registry import register


@register
class BucketSort(SymbolStringTask):
    name = "bucket_sort"
    version = "1"
    description = "sort n symbols over a 5-letter alphabet (train n 1-40); per-token accuracy of the output"
    n_input, n_output = 5, 5

    def answer_length(self, length: int) -> int:
        return length

    def answer(self, x: Tensor) -> Tensor:
        return x.sort(dim=1).values
