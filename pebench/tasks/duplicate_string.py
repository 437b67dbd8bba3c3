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
from torch import Tensor

from pebench.tasks.common import SymbolStringTask
from pebench.tasks.registry import register


@register
class DuplicateString(SymbolStringTask):
    name = "duplicate_string"
    version = "1"
    description = "write a string of n bits twice (train n 1-40); per-token accuracy of the 2n output tokens"
    n_input, n_output = 2, 2

    def answer_length(self, length: int) -> int:
        return 2 * length

    def answer(self, x: Tensor) -> Tensor:
        return torch.cat([x, x], dim=1)
