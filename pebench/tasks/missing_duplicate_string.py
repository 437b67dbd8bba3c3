"""Missing duplicate string (context-sensitive): the masked symbol of a duplicated binary string.

Source: the "missing duplicate string" task of Delétang et al., "Neural Networks and the Chomsky Hierarchy",
ICLR 2023, arXiv:2207.02098 (protocol: :class:`~pebench.tasks.common.ChomskyTask`).

Definition. The task length ``n >= 2`` is the input length. Bits ``w_1 .. w_k`` with ``k = floor(n / 2)`` are i.i.d.
uniform over ``{0, 1}``; the input is ``w w`` (``2k`` tokens) with the token at one position ``j``, uniform over
``1 .. 2k``, replaced by ``MASK``, followed by one ``EMPTY`` token when ``n`` is odd (as in the paper, so that the
input has exactly ``n`` tokens). The answer is the masked bit ``y = (w w)_j``. Tokens: ``0``, ``1``, ``MASK = 2``,
``EMPTY = 3``, ``SEP = 4``, ``PAD = 5``. Example (paper): ``0110 0MASK10 -> 1``; ``101 1MASK1 EMPTY -> 0``.

    inputs  = (w w with MASK) [EMPTY]  SEP          targets = IGNORE x n  y        (n + 1 tokens)

Length 1 holds no duplicated string (the paper's generator returns a constant placeholder there): training draws
``n`` from 2..``train_max``. ``P(y = 1) = 1/2`` exactly; chance level 0.5.

Defaults (version 2): training lengths 2..8 (``train_max=8``) and 2400 steps, so that the default model learns the task
in distribution (sinusoidal and learned positions do; its verdicts move with the thread count); at the papers' 2..40
with the global 600 steps RoPE did not learn it (studies/task_defaults, "The ten tasks of issue 15 (version 2
defaults)"). The papers' protocol is ``--task-options missing_duplicate_string:train_max=40 --steps 600``.
"""

from __future__ import annotations

import torch

from pebench.tasks.base import Batch
from pebench.tasks.common import ChomskyTask, answer_layout, train_max_option
from pebench.tasks.registry import register

MASK, EMPTY, SEP, PAD = 2, 3, 4, 5


@register
class MissingDuplicateString(ChomskyTask):
    name = "missing_duplicate_string"
    version = "2"
    description = "the masked bit of a duplicated string w w, n tokens (train n 2-8; papers: 2-40); accuracy"
    options = {"train_max": train_max_option(8)}
    default_steps = 2400
    train_min = 2
    min_length = 2
    pad_token = PAD

    @property
    def vocab_size(self) -> int:
        return 6

    @property
    def chance_level(self) -> float:
        return 0.5

    def tokens(self, length: int) -> int:
        return length + 1

    def sample(self, batch_size: int, length: int, generator: torch.Generator, split: str = "train") -> Batch:
        self.check_length(length)
        self.check_split(split)
        k = length // 2
        w = torch.randint(0, 2, (batch_size, k), generator=generator)
        doubled = torch.cat([w, w], dim=1)
        where = torch.randint(0, 2 * k, (batch_size,), generator=generator)
        rows = torch.arange(batch_size)
        answer = doubled[rows, where].unsqueeze(1)
        doubled[rows, where] = MASK
        prompt = torch.cat([doubled, torch.full((batch_size, length % 2), EMPTY, dtype=torch.long)], dim=1)
        return Batch(*answer_layout(prompt, answer, SEP))
