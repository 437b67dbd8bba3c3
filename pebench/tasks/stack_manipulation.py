"""Stack manipulation (deterministic context-free): apply POP / PUSH actions to a binary stack, output the result.

Source: the "stack manipulation" task of Delétang et al., "Neural Networks and the Chomsky Hierarchy", ICLR 2023,
arXiv:2207.02098 (protocol: :class:`~pebench.tasks.common.ChomskyTask`).

Definition. The task length ``n`` is the input length: an initial stack of ``s`` bits, given bottom to top, then
``n - s`` actions. For ``n >= 2`` the stack size ``s`` is uniform over ``1 .. n - 1``, the bits are i.i.d. uniform
over ``{0, 1}`` and the actions i.i.d. uniform over ``POP``, ``PUSH 0``, ``PUSH 1``; for ``n = 1`` the input is one
stack bit and no action (as in the paper). The actions run left to right; a ``POP`` on the empty stack does
nothing. The answer is the final stack from top to bottom (as if popped), then ``END``; as in the paper the scored
output is the stack and the termination token (the paper's zero padding after it is unscored; here it is ``PAD``).
Tokens: bits ``0``, ``1``, ``POP = 2``, ``PUSH0 = 3``, ``PUSH1 = 4``, ``END = 5``, ``SEP = 6``, ``PAD = 7``.
Example (paper): ``0 1 1 0 PUSH1 POP POP -> 1 1 0 END``.

    inputs  = stack actions  SEP  final          targets = IGNORE x n  final END        (final: top first)

The final stack has at most ``n`` bits (every token of the input adds at most one), so a sequence is padded to
``2n + 1`` tokens. Chance level 1/3 (uniform over the output symbols 0, 1, END).

Defaults (version 2): training lengths 1..10 (``train_max=10``) and 1200 steps, so that the default model learns the
task in distribution (every core encoding does); at the papers' 1..40 with the global 600 steps RoPE did not learn it
(studies/task_defaults, "The ten tasks of issue 15 (version 2 defaults)"). The papers' protocol is
``--task-options stack_manipulation:train_max=40 --steps 600``.
"""

from __future__ import annotations

import torch

from pebench.tasks.base import Batch
from pebench.tasks.common import ChomskyTask, list_layout, python_random, train_max_option
from pebench.tasks.registry import register

POP, PUSH0, PUSH1, END, SEP, PAD = 2, 3, 4, 5, 6, 7


def final_stack(stack: list[int], actions: list[int]) -> list[int]:
    """The stack (bottom to top) after ``actions``."""
    out = list(stack)
    for a in actions:
        if a == POP:
            if out:
                out.pop()
        else:
            out.append(a - PUSH0)
    return out


@register
class StackManipulation(ChomskyTask):
    name = "stack_manipulation"
    version = "2"
    description = "final stack (top first) after n bits and POP/PUSH actions (train n 1-10; papers: 1-40); accuracy"
    options = {"train_max": train_max_option(10)}
    default_steps = 1200
    pad_token = PAD

    @property
    def vocab_size(self) -> int:
        return 8

    @property
    def chance_level(self) -> float:
        return 1.0 / 3.0

    def tokens(self, length: int) -> int:
        return 2 * length + 1

    def sample(self, batch_size: int, length: int, generator: torch.Generator, split: str = "train") -> Batch:
        self.check_length(length)
        self.check_split(split)
        rng = python_random(generator)
        prompts, answers = [], []
        for _ in range(batch_size):
            s = 1 if length == 1 else rng.randint(1, length - 1)
            stack = [rng.randrange(2) for _ in range(s)]
            actions = [rng.choice((POP, PUSH0, PUSH1)) for _ in range(length - s)]
            prompts.append(stack + actions)
            answers.append([*reversed(final_stack(stack, actions)), END])
        return list_layout(prompts, answers, SEP, PAD, self.tokens(length))
