"""Even pairs (regular): is the number of unequal neighbouring pairs ("ab" and "ba") in a binary string odd?

Source: the "even pairs" task of Delétang et al., "Neural Networks and the Chomsky Hierarchy", ICLR 2023,
arXiv:2207.02098 (protocol: :class:`~pebench.tasks.common.ChomskyTask`).

Definition. The task length ``n`` is the input length. Symbols ``x_1 .. x_n`` are i.i.d. uniform over ``{0, 1}``
(the paper's ``a`` and ``b``); the answer is the single token

    y = (#{i < n : x_i != x_{i+1}}) mod 2,

0 when the number of ``ab`` plus ``ba`` pairs is even, 1 when it is odd (the paper's classes). Each change of symbol
flips the current symbol, so ``y = 1`` exactly when ``x_1 != x_n``: a regular language that only needs the first and
the last symbol. Tokens: ``0``, ``1``, ``SEP = 2``, ``PAD = 3``.

    inputs  = x_1 .. x_n  SEP          targets = IGNORE x n  y        (n + 1 tokens)

For ``n >= 2``, ``P(y = 1) = 1/2`` exactly; for ``n = 1`` the answer is always 0. Chance level 0.5.

Defaults (version 2): training lengths 1..10 (``train_max=10``) and 1200 steps, so that the default model learns the
task in distribution (in seed 0 every core encoding but ALiBi does); at the papers' 1..40 with the global 600 steps RoPE
did not learn it (studies/task_defaults, "The ten tasks of issue 15 (version 2 defaults)"). The papers' protocol is
``--task-options even_pairs:train_max=40 --steps 600``.
"""

from __future__ import annotations

from torch import Tensor

from pebench.tasks.common import SymbolStringTask, train_max_option
from pebench.tasks.registry import register


@register
class EvenPairs(SymbolStringTask):
    name = "even_pairs"
    version = "2"
    description = "is the number of ab and ba pairs in n bits odd? (train n 1-10; papers: 1-40); accuracy of the answer"
    options = {"train_max": train_max_option(10)}
    default_steps = 1200
    n_input, n_output = 2, 2

    def answer_length(self, length: int) -> int:
        return 1

    def answer(self, x: Tensor) -> Tensor:
        return (x[:, 1:] != x[:, :-1]).sum(dim=1, keepdim=True).remainder(2)
