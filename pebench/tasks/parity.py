"""Parity (regular): is the number of ones in a bit string odd?

Source: the "parity check" task of Delétang et al., "Neural Networks and the Chomsky Hierarchy", ICLR 2023,
arXiv:2207.02098 (protocol: :class:`~pebench.tasks.common.ChomskyTask`).

Definition. The task length ``n`` is the input length. Bits ``x_1 .. x_n`` are i.i.d. uniform over ``{0, 1}``; the
answer is the single token ``y = (x_1 + ... + x_n) mod 2``. Tokens: ``0``, ``1``, ``SEP = 2``, ``PAD = 3``.

    inputs  = x_1 .. x_n  SEP          targets = IGNORE x n  y        (n + 1 tokens)

With uniform bits, ``P(y = 1) = 1/2`` exactly for every ``n >= 1``: the classes are balanced, chance level 0.5.
"""

from __future__ import annotations

from torch import Tensor

from pebench.tasks.common import SymbolStringTask
from pebench.tasks.registry import register


@register
class Parity(SymbolStringTask):
    name = "parity"
    version = "1"
    description = "is the number of ones in n bits odd? (train n 1-40); per-token accuracy of the answer"
    n_input, n_output = 2, 2

    def answer_length(self, length: int) -> int:
        return 1

    def answer(self, x: Tensor) -> Tensor:
        return x.sum(dim=1, keepdim=True).remainder(2)
