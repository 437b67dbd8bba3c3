"""Odds first (context-sensitive): write a binary string's odd-position symbols, then its even-position ones.

Source: the "odds first" task of Delétang et al., "Neural Networks and the Chomsky Hierarchy", ICLR 2023,
arXiv:2207.02098 (protocol: :class:`~pebench.tasks.common.ChomskyTask`).

Definition. The task length ``n`` is the input length. Bits ``x_1 .. x_n`` are i.i.d. uniform over ``{0, 1}``; the
answer is the ``n`` tokens

    x_1 x_3 x_5 ...  x_2 x_4 x_6 ...

(positions counted from 1, as in the paper's definition and examples: ``00110101 -> 0100 0111``, ``110 -> 10 1``).
The paper's released generator emits the two halves the other way round (``x_2 x_4 .. x_1 x_3 ..``); the paper's
text is followed here, the two versions are mirror images of the same task. Tokens: ``0``, ``1``, ``SEP = 2``,
``PAD = 3``.

    inputs  = x  SEP  answer[:-1]          targets = IGNORE x n  answer        (2n tokens)

Metric: per-token accuracy over the ``n`` output tokens; chance level 0.5.

Defaults (version 2): training lengths 1..10 (``train_max=10``) and 1200 steps, so that the default model learns the
task in distribution (every core encoding does); at the papers' 1..40 with the global 600 steps RoPE did not learn it
(studies/task_defaults, "The ten tasks of issue 15 (version 2 defaults)"). The papers' protocol is
``--task-options odds_first:train_max=40 --steps 600``.
"""

from __future__ import annotations

import torch
from torch import Tensor

from pebench.tasks.common import SymbolStringTask, train_max_option
from pebench.tasks.registry import register


@register
class OddsFirst(SymbolStringTask):
    name = "odds_first"
    version = "2"
    description = "odd-position bits of n bits, then the even ones (train n 1-10; papers: 1-40); token accuracy"
    options = {"train_max": train_max_option(10)}
    default_steps = 1200
    n_input, n_output = 2, 2

    def answer_length(self, length: int) -> int:
        return length

    def answer(self, x: Tensor) -> Tensor:
        return torch.cat([x[:, 0::2], x[:, 1::2]], dim=1)  # 0-based columns 0, 2, .. are positions 1, 3, ..
