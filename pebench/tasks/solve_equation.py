"""Solve equation (deterministic context-free): the unknown ``x`` of a bracketed linear equation modulo 5.

Source: the "solve equation" task of Delétang et al., "Neural Networks and the Chomsky Hierarchy", ICLR 2023,
arXiv:2207.02098 (protocol: :class:`~pebench.tasks.common.ChomskyTask`).

Definition. The task length ``n >= 3`` is the equation length in tokens. As in the paper, an expression of
``n - 2`` tokens is drawn as in :mod:`~pebench.tasks.modular_arithmetic_brackets` with the operators ``{+, -}`` only
(no product, so the equation is linear and ``x`` unique), with value ``v`` modulo 5. One of its numbers becomes
``x``: a position is drawn uniformly over the expression and moved right (cyclically) to the first number (the
paper's rule; numbers after long runs of brackets and operators are chosen more often). The input is the
expression with ``x``, then ``=`` and ``v``; the answer is the replaced number. Tokens: numbers ``0 .. 4``,
``+ = 5``, ``- = 6``, ``( = 8``, ``) = 9`` (those of ``modular_arithmetic_brackets``; ``* = 7`` never occurs),
``x = 10``, ``= = 11``, ``SEP = 12``, ``PAD = 13``. Example: ``((x - 3) + - 1) = 2 -> 1``.

    inputs  = E(n - 2; x)  =  v  SEP          targets = IGNORE x n  x        (n + 1 tokens)

Lengths 1 and 2 hold no equation (the paper's generator returns a placeholder there): training draws ``n`` from
3..``train_max``. The numbers are uniform and the choice of ``x`` does not depend on them, so the answer is uniform
over ``0 .. 4``; chance level 1/5.

Defaults (version 2): training lengths 3..6 (``train_max=6``) and 2400 steps, so that the default model learns the task
in distribution (every core encoding does); at the papers' 3..40 with the global 600 steps RoPE did not learn it
(studies/task_defaults, "The ten tasks of issue 15 (version 2 defaults)"). The papers' protocol is
``--task-options solve_equation:train_max=40 --steps 600``.
"""

from __future__ import annotations

import torch

from pebench.tasks.base import Batch
from pebench.tasks.common import ChomskyTask, list_layout, python_random, train_max_option
from pebench.tasks.modular_arithmetic_brackets import MINUS, MOD, PLUS, random_expression
from pebench.tasks.registry import register

X, EQUALS, SEP, PAD = 10, 11, 12, 13


@register
class SolveEquation(ChomskyTask):
    name = "solve_equation"
    version = "2"
    description = "x in an n-token linear equation mod 5 over + - (train n 3-6; papers: 3-40); accuracy"
    options = {"train_max": train_max_option(6)}
    default_steps = 2400
    train_min = 3
    min_length = 3
    pad_token = PAD

    @property
    def vocab_size(self) -> int:
        return 14

    @property
    def chance_level(self) -> float:
        return 1.0 / MOD

    def tokens(self, length: int) -> int:
        return length + 1

    def sample(self, batch_size: int, length: int, generator: torch.Generator, split: str = "train") -> Batch:
        self.check_length(length)
        self.check_split(split)
        rng = python_random(generator)
        prompts, answers = [], []
        for _ in range(batch_size):
            expr, value = random_expression(length - 2, rng, (PLUS, MINUS))
            i = rng.randrange(len(expr))
            while expr[i] >= MOD:  # not a number: move right, wrapping around
                i = (i + 1) % len(expr)
            answers.append([expr[i]])
            prompts.append([*expr[:i], X, *expr[i + 1 :], EQUALS, value])
        return list_layout(prompts, answers, SEP, PAD, self.tokens(length))
