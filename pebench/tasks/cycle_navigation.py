"""Cycle navigation (regular): where does a walk on a 5-cycle end?

Source: the "cycle navigation" task of Delétang et al., "Neural Networks and the Chomsky Hierarchy", ICLR 2023,
arXiv:2207.02098 (protocol: :class:`~pebench.tasks.common.ChomskyTask`).

Definition. The task length ``n`` is the number of moves. Moves ``a_1 .. a_n`` are i.i.d. uniform over
``{0, 1, 2}``, meaning a step of ``a - 1``: 0 = one step left, 1 = stay, 2 = one step right. Starting at state 0 on
a cycle of 5 states, the answer is the final state

    y = (sum_i (a_i - 1)) mod 5.

Tokens: moves and states share ``0 .. 4`` (moves use 0-2), ``SEP = 5``, ``PAD = 6``.

    inputs  = a_1 .. a_n  SEP          targets = IGNORE x n  y        (n + 1 tokens)

Chance level 1/5 (uniform over the five states; for ``n >= 3`` the final state is close to uniform).
"""

from __future__ import annotations

from torch import Tensor

from pebench.tasks.common import SymbolStringTask
from pebench.tasks.registry import register


@register
class CycleNavigation(SymbolStringTask):
    name = "cycle_navigation"
    version = "1"
    description = "final state of n moves (left/stay/right) on a 5-cycle (train n 1-40); per-token accuracy"
    n_input, n_output = 3, 5

    def answer_length(self, length: int) -> int:
        return 1

    def answer(self, x: Tensor) -> Tensor:
        return (x - 1).sum(dim=1, keepdim=True).remainder(self.n_output)
