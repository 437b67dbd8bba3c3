"""Binary multiplication (context-sensitive): the product of two little-endian binary numbers.

Source: the "binary multiplication" task of Delétang et al., "Neural Networks and the Chomsky Hierarchy", ICLR 2023,
arXiv:2207.02098 (protocol: :class:`~pebench.tasks.common.ChomskyTask`).

Definition. As :mod:`~pebench.tasks.binary_addition` with the product in place of the sum: the task length ``n >= 3``
is the expression length ``n_1 + 1 + n_2``, the split ``n_1`` is uniform over ``1 .. n - 2`` and ``n_2 = n - 1 - n_1``,
the operands are uniform over ``1 .. 2^{n_i} - 1`` and written in little-endian binary with exactly ``n_i`` bits. The
answer is the product in little-endian binary without trailing zeros, then ``END``; the scored output is the
product's bits and the termination token (the paper's zero padding after it is unscored; here it is ``PAD``).
Tokens: bits ``0``, ``1``, ``TIMES = 2``, ``END = 3``, ``SEP = 4``, ``PAD = 5``. Examples (paper):
``001 * 01101 -> 0001101 END`` (4 x 22 = 88), ``1001 * 000001 -> 000001001 END`` (9 x 32 = 288).

    inputs  = x TIMES y  SEP  bits(x y)            targets = IGNORE x n  bits(x y) END

The product has at most ``n_1 + n_2 = n - 1`` bits, so a sequence is padded to ``2n`` tokens. Lengths 1 and 2 cannot
hold an expression: training draws ``n`` from 3..``train_max``. Chance level 1/3 (uniform over 0, 1, END).

Annotations: ``digit_index`` as in :mod:`~pebench.tasks.binary_addition` (every training and evaluation batch); no
``coupled_position``: Cho et al. couple a multiplication's digits by another rule than an addition's (their N x 2
multiplication), which is not implemented here.

Defaults (version 2): training lengths 3..10 (``train_max=10``) and 1200 steps, so that the default model learns the
task in distribution (every core encoding does); at the papers' 3..40 with the global 600 steps RoPE did not learn it
(studies/task_defaults, "The ten tasks of issue 15 (version 2 defaults)"). The papers' protocol is
``--task-options binary_multiplication:train_max=40 --steps 600``.
"""

from __future__ import annotations

from pebench.tasks.base import DIGIT_INDEX
from pebench.tasks.binary_addition import BinaryAddition
from pebench.tasks.common import train_max_option
from pebench.tasks.registry import register

TIMES = 2  # the operator token (binary_addition's PLUS)


@register
class BinaryMultiplication(BinaryAddition):
    name = "binary_multiplication"
    version = "2"
    description = "product of two little-endian binary numbers, n = x * y tokens (train n 3-10; papers: 3-40); accuracy"
    options = {"train_max": train_max_option(10)}
    default_steps = 1200
    annotations = frozenset({DIGIT_INDEX})

    def combine(self, x: int, y: int) -> int:
        return x * y
