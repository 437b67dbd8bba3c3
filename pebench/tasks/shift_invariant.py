"""Shift-invariant pattern detection: does the pair ``A B`` occur anywhere, including where training never put it?

Source: the seed study (a published interactive Streamlit comparison of positional encodings on four synthetic tasks,
which pebench's core tasks and default model come from). Unlike that study, the in-distribution split ("id") here
draws insertion positions from exactly the training distribution; only "ood" uses shifted ones.

Definition. Content tokens are ``0 .. C-1`` (``C`` = option ``n_tokens``, default 20); reserved tokens are
``A = C``, ``B = C+1``, ``QUERY = C+2`` and the answers ``NO = C+3``, ``YES = C+4`` (vocabulary ``C + 5``). A
sequence of length ``T`` is ``T - 1`` i.i.d. uniform content tokens followed by ``QUERY``. A per-sample fair coin
(Bernoulli(0.5)) decides whether the pair is present. Every sequence carries the two reserved tokens at positions
``p`` and ``p + 1``: ``A B`` for a positive, the reversed ``B A`` for a negative, with ``p`` uniform over

    "train", "id":  [0, h)          where h = train_length // 2 - 1  (15 at the training length 32)
    "ood":          [h, T - 2)      (p >= h, p + 1 <= T - 2: positions training never used)

The reversed pair in negatives is this project's change to the study's task: if negatives held no reserved token,
spotting a lone ``A`` anywhere would answer the question and the task would need no positional information at all.
With ``B A`` as the distractor the model must detect the order of two adjacent tokens, a relative-position pattern,
wherever it occurs. Content tokens never produce ``A``/``B`` by accident. Only the ``QUERY`` position is scored:

    y_{T-1} = YES if the pair is present else NO,      y_t = IGNORE for t < T - 1.

Chance level is 0.5. Both splits need ``T - 2 > h``, i.e. ``T >= train_length // 2 + 2`` (18); at ``T = 32``,
"ood" draws ``p`` from ``[15, 30)``.
"""

from __future__ import annotations

from typing import Any

import torch

from pebench.options import Option
from pebench.tasks.base import IGNORE, Batch, Task
from pebench.tasks.registry import register


@register
class ShiftInvariant(Task):
    name = "shift_invariant"
    version = "1"
    description = "YES/NO at the final QUERY: does the pair A B occur, at training or at unseen (ood) positions?"
    paper = "seed study (a published Streamlit comparison of PEs)"
    options = {"n_tokens": Option(20, "number of content tokens C", type=int, low=1, high=100_000)}
    eval_splits = ("id", "ood")
    train_length = 32
    default_steps = 400  # tuned: see README 'Default configuration'
    # the "ood" range [h, T - 2) must be non-empty: T - 2 > h = train_length // 2 - 1

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.min_length = self.train_length // 2 + 2
        c = self.opts["n_tokens"]
        self.n_content = c
        self.token_a, self.token_b, self.query, self.no, self.yes = c, c + 1, c + 2, c + 3, c + 4

    @property
    def vocab_size(self) -> int:
        return self.n_content + 5

    @property
    def chance_level(self) -> float:
        return 0.5

    @property
    def boundary(self) -> int:
        """``h``: training (and "id") insertions start at ``p < h``; "ood" ones at ``p >= h``."""
        return self.train_length // 2 - 1

    def position_range(self, length: int, split: str) -> tuple[int, int]:
        """Half-open range ``[lo, hi)`` of the insertion position ``p`` of ``A`` for ``split`` at ``length``."""
        if split == "ood":
            return self.boundary, length - 2
        return 0, self.boundary

    def sample(self, batch_size: int, length: int, generator: torch.Generator, split: str = "train") -> Batch:
        self.check_length(length)
        self.check_split(split)
        inputs = torch.randint(0, self.n_content, (batch_size, length), generator=generator)
        inputs[:, -1] = self.query
        present = torch.randint(0, 2, (batch_size,), generator=generator).bool()
        lo, hi = self.position_range(length, split)
        p = torch.randint(lo, hi, (batch_size,), generator=generator)
        rows = torch.arange(batch_size)
        first = torch.where(present, self.token_a, self.token_b)
        inputs[rows, p] = first
        inputs[rows, p + 1] = self.token_a + self.token_b - first
        targets = torch.full_like(inputs, IGNORE)
        targets[:, -1] = torch.where(present, self.yes, self.no)
        return Batch(inputs, targets)
