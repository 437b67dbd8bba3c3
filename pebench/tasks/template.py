"""Template continuation: continue an arithmetic progression after a middle marker, then close it.

Source: the template task of a published notebook study of positional encodings. That notebook had only 71 distinct
sequences and scored padding predicting padding; here the space of sequences is large, the test sequences provably
never occur in training, and padding is never scored.

Definition. Numbers are ``0 .. M-1`` (``M`` = option ``n_numbers``, default 100); ``BOS = M``, ``MID = M + 1``,
``END = M + 2``, ``PAD = M + 3`` (vocabulary ``M + 4``). The task length ``L`` is the number of tokens (padding
included). A sequence holds an arithmetic progression modulo ``M``,

    x_i = (a + i * d) mod M,    i = 0 .. n-1,    start a in 0..M-1, step d in 1..M-1,

laid out as ``BOS x_0 .. x_{k-1} MID x_k .. x_{n-1} END PAD ...`` with ``k = n // 2`` prompt terms. The number of
terms ``n`` is uniform over ``[lo(L), L - 3]`` with ``lo(L) = max(4, (L - 3) // 2 + 1)``: a sequence fills more than
half of its ``L`` tokens, so every sequence at length ``2L`` is longer than any at length ``L``. Scored: the
continuation and the end marker -- the target at ``MID`` is ``x_k``, at ``x_j`` (``j >= k``) it is ``x_{j+1}``, at
``x_{n-1}`` it is ``END``; everything else (the prompt, ``END`` itself, padding) is IGNORE.

Held-out pairs. The ``M (M - 1)`` (start, step) pairs are split once, by a fixed permutation (seed 0), into a
training set and a held-out 20%. The "test" split draws only held-out pairs, "train" only the others; since the
first two terms determine ``(a, d)``, no test sequence can occur in training.

Chance level ``1 / (M + 1)`` (uniform over the numbers and ``END``).

Defaults (version 2): 1200 steps at training length 32. With version 1's 600 steps every core encoding learned it
only partly; with 1200 RoPE learns it and the other four still only partly
(studies/task_defaults, "What the defaults learn (measured)"). Version 1's setting is
``--steps 600``; the notebook's own model and training are not reproduced (its 71 sequences are replaced, above).
"""

from __future__ import annotations

from typing import Any

import torch

from pebench.options import Option
from pebench.tasks.base import IGNORE, Batch, Task
from pebench.tasks.registry import register

HELD_OUT_FRACTION = 0.2
PARTITION_SEED = 0


def term_range(length: int) -> tuple[int, int]:
    """Inclusive range ``[lo, hi]`` of the number of terms ``n`` at task length ``length``."""
    return max(4, (length - 3) // 2 + 1), length - 3


@register
class Template(Task):
    name = "template"
    version = "2"
    description = "continue an arithmetic progression after MID and close it with END; (start, step) held out"
    default_steps = 1200  # version 2: with 600 steps every core encoding learned it only partly (docs/defaults.md)
    paper = "a published notebook study of positional encodings"
    options = {"n_numbers": Option(100, "numbers M (progressions are modulo M)", type=int, low=3, high=100_000)}
    train_length = 32
    min_length = 7

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        m = self.n_numbers = int(self.opts["n_numbers"])
        self.bos, self.mid, self.end, self.pad = m, m + 1, m + 2, m + 3
        # every (start, step) pair as a row; a fixed permutation decides which are held out
        pairs = torch.tensor([(a, d) for a in range(m) for d in range(1, m)])
        perm = torch.randperm(len(pairs), generator=torch.Generator().manual_seed(PARTITION_SEED))
        n_test = max(1, int(round(HELD_OUT_FRACTION * len(pairs))))
        self.test_pairs = pairs[perm[:n_test]]
        self.train_pairs = pairs[perm[n_test:]]

    @property
    def vocab_size(self) -> int:
        return self.n_numbers + 4

    @property
    def chance_level(self) -> float:
        return 1.0 / (self.n_numbers + 1)

    def sample(self, batch_size: int, length: int, generator: torch.Generator, split: str = "train") -> Batch:
        self.check_length(length)
        self.check_split(split)
        pool = self.train_pairs if split == "train" else self.test_pairs
        ad = pool[torch.randint(0, len(pool), (batch_size,), generator=generator)]
        lo, hi = term_range(length)
        n = torch.randint(lo, hi + 1, (batch_size,), generator=generator)
        k = n // 2
        t = torch.arange(length)
        # token t holds term i = t - 1 before MID (1 <= t <= k) and i = t - 2 after it (k + 2 <= t <= n + 1)
        idx = torch.where(t[None, :] <= k[:, None], t - 1, t - 2)
        terms = (ad[:, :1] + idx * ad[:, 1:]).remainder(self.n_numbers)
        kk, nn = k[:, None], n[:, None]
        inputs = torch.full((batch_size, length), self.pad, dtype=torch.long)
        is_term = ((t >= 1) & (t <= kk)) | ((t >= kk + 2) & (t <= nn + 1))
        inputs = torch.where(is_term, terms, inputs)
        inputs[:, 0] = self.bos
        inputs = torch.where(t == kk + 1, self.mid, inputs)
        inputs = torch.where(t == nn + 2, self.end, inputs)
        # scored: positions k+1 (MID) .. n+1 (last term) predict the next token (the continuation, then END)
        targets = torch.full_like(inputs, IGNORE)
        scored = (t >= kk + 1) & (t <= nn + 1)
        nxt = torch.cat([inputs[:, 1:], torch.full((batch_size, 1), self.pad)], dim=1)
        targets = torch.where(scored, nxt, targets)
        return Batch(inputs, targets)
