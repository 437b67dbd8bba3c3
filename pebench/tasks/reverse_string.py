"""Reversal, in the two protocols of the literature: ``reverse`` (Kazemnejad et al.) and ``reverse_string``
(Delétang et al.). Both write the input string backwards after a separator; they differ in alphabet, lengths and
metric, so they are two tasks (one family, one module) rather than one task with an option: an option would change
the metric, chance level and lengths behind one task name, and results of the two would mix in every table.

``reverse``. Source: the algorithmic length-generalisation set of Kazemnejad et al., "The Impact of Positional
Encoding on Length Generalization in Transformers", NeurIPS 2023, arXiv:2305.19466; training and OOD lengths of the
published study this set follows (reverse: train 3-8 items, OOD 9-16, plus 2x and 4x of 8).

Definition. The task length ``n`` is the number of items. Items ``x_1 .. x_n`` are i.i.d. uniform over
``0 .. N-1`` (``N`` = option ``n_items``, default 32); ``SEP = N``, ``PAD = N + 1`` (vocabulary ``N + 2``).

    inputs  = x_1 .. x_n  SEP  x_n .. x_2
    targets = IGNORE x n       x_n .. x_1          (2n tokens)

Metric: exact match of the answer. Chance level at the training maximum ``n = 8``: ``N^-8``.

``reverse_string``. Source: the deterministic context-free "reverse string" task of Delétang et al., "Neural Networks
and the Chomsky Hierarchy", ICLR 2023, arXiv:2207.02098 (protocol: :class:`~pebench.tasks.common.ChomskyTask`:
train on lengths 1-40, quick tier 40, 80, 160, full tier every length 40-500).

Definition. The task length ``n`` is the input length. Bits ``x_1 .. x_n`` are i.i.d. uniform over ``{0, 1}`` (the
paper uses binary strings); the answer is ``x_n .. x_1``. Tokens: ``0``, ``1``, ``SEP = 2``, ``PAD = 3``.

    inputs  = x  SEP  x_n .. x_2          targets = IGNORE x n  x_n .. x_1        (2n tokens)

Metric: per-token accuracy over the ``n`` output tokens; chance level 0.5.

``reverse_string`` defaults (version 2): training lengths 1..10 (``train_max=10``) and 1200 steps, so that the default
model learns the task in distribution (every core encoding does); at the papers' 1..40 with the global 600 steps RoPE
did not learn it (studies/task_defaults, "The ten tasks of issue 15 (version 2 defaults)"). The papers'
protocol is ``--task-options reverse_string:train_max=40 --steps 600``.
"""

from __future__ import annotations

import torch
from torch import Tensor

from pebench.tasks.common import ItemStringTask, SymbolStringTask, algorithmic_lengths, train_max_option
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


@register
class ReverseString(SymbolStringTask):
    name = "reverse_string"
    version = "2"
    description = "reverse a string of n bits (train n 1-10; papers: 1-40); per-token accuracy"
    options = {"train_max": train_max_option(10)}
    default_steps = 1200
    n_input, n_output = 2, 2

    def answer_length(self, length: int) -> int:
        return length

    def answer(self, x: Tensor) -> Tensor:
        return x.flip(1)
