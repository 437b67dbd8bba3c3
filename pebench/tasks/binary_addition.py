"""Binary addition (context-sensitive): the sum of two little-endian binary numbers.

Source: the "binary addition" task of Delétang et al., "Neural Networks and the Chomsky Hierarchy", ICLR 2023,
arXiv:2207.02098 (protocol: :class:`~pebench.tasks.common.ChomskyTask`).

Definition. The task length ``n >= 3`` is the expression length ``n_1 + 1 + n_2``: the split ``n_1`` is uniform over
``1 .. n - 2`` and ``n_2 = n - 1 - n_1``; the operands are uniform over ``1 .. 2^{n_i} - 1`` and written in
little-endian binary with exactly ``n_i`` bits (so trailing zeros may occur). The answer is the sum in little-endian
binary without trailing zeros, followed by ``END``; as in the paper the scored output is the sum's bits and the
termination token (the paper's zero padding after it is unscored; here it is ``PAD``). Tokens: bits ``0``, ``1``,
``PLUS = 2``, ``END = 3``, ``SEP = 4``, ``PAD = 5``. Example: ``001 + 01101`` (4 + 22) -> ``01011 END`` (26).

    inputs  = x PLUS y  SEP  bits(x + y)            targets = IGNORE x n  bits(x + y) END

The sum has at most ``n - 1`` bits, so a sequence is padded to ``2n`` tokens. Lengths 1 and 2 cannot hold an
expression: training draws ``n`` from 3..``train_max``. Chance level 1/3 (uniform over the output symbols 0, 1, END).

Annotations (every training and evaluation batch; 0 at padding; rules in
:func:`~pebench.tasks.common.addition_annotations`, with bits as digits): ``digit_index`` ``1, 2, ..`` along each
operand and the sum (the bit's significance plus one, everything being little-endian), 0 for ``PLUS`` and ``SEP``;
``coupled_position`` ``2 + j`` for a bit of significance ``j`` in either operand or the sum, 1 for ``PLUS`` and
``SEP``. ``001 + 01101``: digit_index ``1 2 3 0 1 2 3 4 5 0 1 ..``, coupled ``2 3 4 1 2 3 4 5 6 1 2 ..``.

Defaults (version 2): training lengths 3..16 (``train_max=16``) and 1200 steps. At the papers' 3..40 every core
encoding learned it only partly with 600 steps (chance 1/3), and RoPE not much more with 2400; at 3..16 and 1200
steps sinusoidal and RoPE learn it in every seed (studies/task_defaults, "What the defaults learn (measured)"). The
papers' protocol is
``--task-options binary_addition:train_max=40``.
"""

from __future__ import annotations

import torch

from pebench.tasks.base import COUPLED_POSITION, DIGIT_INDEX, IGNORE, Batch
from pebench.tasks.common import ChomskyTask, addition_annotations, train_max_option
from pebench.tasks.registry import register

PLUS, END, SEP, PAD = 2, 3, 4, 5


def random_operand_bits(n_bits: int, generator: torch.Generator) -> list[int]:
    """Little-endian bits of a number uniform over ``1 .. 2^n_bits - 1`` (uniform non-zero bit vector)."""
    while True:
        bits = torch.randint(0, 2, (n_bits,), generator=generator)
        if bool(bits.any()):
            return bits.tolist()


def little_endian(value: int) -> list[int]:
    """Bits of ``value > 0``, least significant first, without trailing zeros."""
    return [int(c) for c in reversed(f"{value:b}")]


def bits_value(bits: list[int]) -> int:
    return sum(b << i for i, b in enumerate(bits))


@register
class BinaryAddition(ChomskyTask):
    name = "binary_addition"
    version = "2"
    description = "sum of two little-endian binary numbers, n = x + y tokens (train n 3-16; papers: 3-40); accuracy"
    train_min = 3
    options = {"train_max": train_max_option(16)}
    default_steps = 1200  # version 2: see the module docstring
    min_length = 3
    pad_token = PAD
    annotations = frozenset({DIGIT_INDEX, COUPLED_POSITION})

    @property
    def vocab_size(self) -> int:
        return 6

    @property
    def chance_level(self) -> float:
        return 1.0 / 3.0

    def tokens(self, length: int) -> int:
        return 2 * length

    def combine(self, x: int, y: int) -> int:
        """The answer's value from the operands' (``binary_multiplication`` multiplies)."""
        return x + y

    def sample(self, batch_size: int, length: int, generator: torch.Generator, split: str = "train") -> Batch:
        self.check_length(length)
        self.check_split(split)
        width = self.tokens(length)
        inputs = torch.full((batch_size, width), PAD, dtype=torch.long)
        targets = torch.full((batch_size, width), IGNORE, dtype=torch.long)
        splits = torch.randint(1, length - 1, (batch_size,), generator=generator).tolist()
        ann = {name: torch.zeros((batch_size, width), dtype=torch.long) for name in sorted(self.annotations)}
        for row, n1 in enumerate(splits):
            x = random_operand_bits(n1, generator)
            y = random_operand_bits(length - 1 - n1, generator)
            answer = [*little_endian(self.combine(bits_value(x), bits_value(y))), END]
            seq = [*x, PLUS, *y, SEP, *answer[:-1]]
            inputs[row, : len(seq)] = torch.tensor(seq)
            targets[row, length : length + len(answer)] = torch.tensor(answer)
            notes = addition_annotations(len(x), len(y), len(answer) - 1, True, True, max(len(x), len(y)) + 1)
            for name, values in ann.items():
                values[row, : len(seq)] = torch.tensor(notes[name])
        return Batch(inputs, targets, annotations=ann)
