"""Modular arithmetic without brackets (regular): the value of ``n0 op n1 op ... nk`` modulo 5.

Source: the regular "modular arithmetic" task of Delétang et al., "Neural Networks and the Chomsky Hierarchy",
ICLR 2023, arXiv:2207.02098 (protocol: :class:`~pebench.tasks.common.ChomskyTask`).

Definition. The task length ``n`` is the expression length in tokens; expressions have odd length, so an even ``n``
gives an expression of ``n - 1`` tokens (as in the paper). An expression of ``m = 2k + 1`` tokens alternates numbers
and operators, ``v_0 o_1 v_1 ... o_k v_k``, with numbers i.i.d. uniform over ``0 .. 4`` and operators i.i.d. uniform
over ``{+, -, *}``. The answer is its value under the usual precedence (``*`` before ``+`` and ``-``, left to
right otherwise) reduced modulo 5, e.g. ``1 + 2 * 3 = 2``, ``1 - 1 - 1 = 4``, ``0 * 1 + 4 * 3 - 2 = 0``. Tokens:
numbers ``0 .. 4``, ``+ = 5``, ``- = 6``, ``* = 7``, ``SEP = 8``, ``PAD = 9``.

    inputs  = v_0 o_1 .. v_k  SEP          targets = IGNORE x m  y        (m + 1 tokens)

Chance level 1/5 (uniform over the residues).

Defaults (version 2): training lengths 1..6 (``train_max=6``) and 2400 steps. At the papers' 1..40 no core encoding left
chance with 600 steps, nor RoPE with 2400 steps or 4 layers, and at 1..10 RoPE stayed near chance too. At 1..6 three
seeds (2026-11-23) put the task at the edge of what the default model learns: ALiBi learns it in every seed, RoPE and
sinusoidal in two of three, learned positions in one and NoPE in none, with a seed-to-seed spread that makes one
seed's ranking unreliable (studies/task_defaults, "What the defaults learn (measured)"). The papers' protocol is
``--task-options modular_arithmetic:train_max=40``.
"""

from __future__ import annotations

import torch
from torch import Tensor

from pebench.tasks.base import IGNORE, Batch
from pebench.tasks.common import ChomskyTask, answer_layout, train_max_option
from pebench.tasks.registry import register

MOD = 5
PLUS, MINUS, TIMES, SEP, PAD = 5, 6, 7, 8, 9


def evaluate_expressions(expr: Tensor) -> Tensor:
    """Values mod 5 of a ``(B, 2k + 1)`` batch of expressions (vectorised sum of products of signed terms)."""
    numbers, ops = expr[:, 0::2], expr[:, 1::2]
    total = torch.zeros(expr.shape[0], dtype=torch.long)
    term = numbers[:, 0].clone()
    for i in range(ops.shape[1]):
        op, v = ops[:, i], numbers[:, i + 1]
        ends = op != TIMES  # + or - closes the running product term and opens a new one
        total = torch.where(ends, (total + term) % MOD, total)
        signed = torch.where(op == MINUS, (-v) % MOD, v)
        term = torch.where(ends, signed, (term * v) % MOD)
    return (total + term) % MOD


@register
class ModularArithmetic(ChomskyTask):
    name = "modular_arithmetic"
    version = "2"
    description = "value mod 5 of an n-token expression over + - * (no brackets; train n 1-6; papers: 1-40); accuracy"
    options = {"train_max": train_max_option(6)}
    default_steps = 2400  # defaults (version 2): learnable by the default model, see the module docstring
    pad_token = PAD

    @property
    def vocab_size(self) -> int:
        return 10

    @property
    def chance_level(self) -> float:
        return 1.0 / MOD

    def tokens(self, length: int) -> int:
        return length - (length % 2 == 0) + 1

    def sample(self, batch_size: int, length: int, generator: torch.Generator, split: str = "train") -> Batch:
        self.check_length(length)
        self.check_split(split)
        m = length if length % 2 else length - 1
        expr = torch.empty(batch_size, m, dtype=torch.long)
        expr[:, 0::2] = torch.randint(0, MOD, (batch_size, m // 2 + 1), generator=generator)
        expr[:, 1::2] = torch.randint(PLUS, TIMES + 1, (batch_size, m // 2), generator=generator)
        return Batch(*answer_layout(expr, evaluate_expressions(expr).unsqueeze(1), SEP))

    def sample_train(self, batch_size: int, generator: torch.Generator) -> Batch:
        """Lengths drawn per sequence as in every Chomsky task, evaluated in one pass: each row is padded to the
        longest with ``+ 0`` pairs (which leave its value unchanged), evaluated, then cut back and ``PAD``-ed."""
        n = torch.randint(self.train_min, self.train_length + 1, (batch_size,), generator=generator)
        m = n - (n % 2 == 0).long()
        width = int(m.max())
        expr = torch.empty(batch_size, width, dtype=torch.long)
        expr[:, 0::2] = torch.randint(0, MOD, (batch_size, width // 2 + 1), generator=generator)
        expr[:, 1::2] = torch.randint(PLUS, TIMES + 1, (batch_size, width // 2), generator=generator)
        t = torch.arange(width)[None, :]
        beyond = t >= m[:, None]
        expr = torch.where(beyond, torch.where(t % 2 == 1, PLUS, 0), expr)
        values = evaluate_expressions(expr)
        rows = torch.arange(batch_size)
        inputs = torch.cat([torch.where(beyond, PAD, expr), torch.full((batch_size, 1), PAD)], dim=1)
        inputs[rows, m] = SEP
        targets = torch.full_like(inputs, IGNORE)
        targets[rows, m] = values
        return Batch(inputs, targets)
