"""Modular arithmetic with brackets (deterministic context-free): the value modulo 5 of a bracketed expression.

Source: the context-free "modular arithmetic" task of Delétang et al., "Neural Networks and the Chomsky Hierarchy",
ICLR 2023, arXiv:2207.02098 (``modular_arithmetic_brackets`` in their code, built with multiplication; protocol:
:class:`~pebench.tasks.common.ChomskyTask`). The regular variant without brackets is ``modular_arithmetic``.

Definition. The task length ``n`` is the expression length in tokens. An expression ``E(n)`` of ``n`` tokens over
the numbers ``0 .. 4`` is drawn recursively, as in the paper:

    E(1) = d          E(2) = - d          E(3) = ( d )          E(4) = ( - d )
    E(n) = ( E(l) o E(n - 3 - l) )   for n >= 5,

with every number ``d`` uniform over ``0 .. 4``, the left length ``l`` uniform over ``1 .. n - 4`` and the operator
``o`` uniform over ``{+, -, *}``, all independent. The answer is the expression's value modulo 5 (``-`` before a
single number is negation; every binary operation is bracketed, so no precedence is involved), e.g.
``((2 * - 3) - (4 + 1)) = 4``. Tokens: numbers ``0 .. 4``, ``+ = 5``, ``- = 6``, ``* = 7`` (as in
``modular_arithmetic``), ``( = 8``, ``) = 9``, ``SEP = 10``, ``PAD = 11``.

    inputs  = E(n)  SEP          targets = IGNORE x n  y        (n + 1 tokens)

Chance level 1/5 (uniform over the residues). The residues are not equally frequent: a product is 0 whenever one
factor is, so 0 is the most frequent answer (about 0.3 of the answers at lengths 40-160; tests/tasks pins it).

Defaults (version 2): training lengths 1..6 (``train_max=6``) and 2400 steps, so that the default model learns the task
in distribution (every core encoding does); at the papers' 1..40 with the global 600 steps RoPE did not learn it
(studies/task_defaults, "The ten tasks of issue 15 (version 2 defaults)"). The papers' protocol is
``--task-options modular_arithmetic_brackets:train_max=40 --steps 600``.
"""

from __future__ import annotations

import random

import torch

from pebench.tasks.base import Batch
from pebench.tasks.common import ChomskyTask, list_layout, python_random, train_max_option
from pebench.tasks.registry import register

MOD = 5
PLUS, MINUS, TIMES, OPEN, CLOSE, SEP, PAD = 5, 6, 7, 8, 9, 10, 11


def apply(op: int, a: int, b: int) -> int:
    if op == PLUS:
        return (a + b) % MOD
    if op == MINUS:
        return (a - b) % MOD
    return (a * b) % MOD


def random_expression(length: int, rng: random.Random, ops: tuple[int, ...]) -> tuple[list[int], int]:
    """A bracketed expression of ``length >= 1`` tokens drawn as in the module docstring, and its value mod 5.

    Iterative (an explicit stack instead of recursion, so any length works): ``("expr", n)`` writes a
    sub-expression of ``n`` tokens, ``("token", t)`` writes ``t``, ``("close", op)`` writes ``)`` and combines the
    two values on top of the value stack."""
    tokens: list[int] = []
    values: list[int] = []
    todo: list[tuple[str, int]] = [("expr", length)]
    while todo:
        kind, arg = todo.pop()
        if kind == "token":
            tokens.append(arg)
        elif kind == "close":
            tokens.append(CLOSE)
            b, a = values.pop(), values.pop()
            values.append(apply(arg, a, b))
        elif arg >= 5:
            left = rng.randint(1, arg - 4)
            op = rng.choice(ops)
            tokens.append(OPEN)
            todo += [("close", op), ("expr", arg - 3 - left), ("token", op), ("expr", left)]
        else:
            d = rng.randrange(MOD)
            tokens += {1: [d], 2: [MINUS, d], 3: [OPEN, d, CLOSE], 4: [OPEN, MINUS, d, CLOSE]}[arg]
            values.append(-d % MOD if arg in (2, 4) else d)
    return tokens, values[0]


@register
class ModularArithmeticBrackets(ChomskyTask):
    name = "modular_arithmetic_brackets"
    version = "2"
    description = "value mod 5 of an n-token bracketed expression over + - * (train n 1-6; papers: 1-40); accuracy"
    options = {"train_max": train_max_option(6)}
    default_steps = 2400
    pad_token = PAD

    @property
    def vocab_size(self) -> int:
        return 12

    @property
    def chance_level(self) -> float:
        return 1.0 / MOD

    def tokens(self, length: int) -> int:
        return length + 1

    def sample(self, batch_size: int, length: int, generator: torch.Generator, split: str = "train") -> Batch:
        self.check_length(length)
        self.check_split(split)
        rng = python_random(generator)
        drawn = [random_expression(length, rng, (PLUS, MINUS, TIMES)) for _ in range(batch_size)]
        return list_layout([e for e, _ in drawn], [[v] for _, v in drawn], SEP, PAD, self.tokens(length))
