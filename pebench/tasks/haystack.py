"""Shared machinery of the key-retrieval tasks ``passkey`` and ``needle`` (not a task itself).

A 5-digit key sits at a depth in filler text; a question at the end asks for it and the model must write its
digits (Mohtashami & Jaggi, "Landmark Attention: Random-Access Infinite Context Length for Transformers", 2023,
arXiv:2305.16300 for the passkey format; Kamradt 2023, "Needle in a Haystack", for the needle format). The text is
word-level: one token per word, from a fixed small vocabulary.

Tokens: digits ``0 .. 9``; ``DOT = 10``; ``PASSKEY = 11`` ("the pass key is"); ``NEEDLE = 12`` ("the magic number
is"); ``QUERY = 13`` ("what is the pass key? the pass key is"), ``QUESTION = 14`` ("what is the magic number?");
filler words ``15 .. 15 + W - 1`` (``W = 48``) (vocabulary 63).

Layout at task length ``L`` (the number of tokens): ``F = L - 12`` filler tokens with the key statement
``MARK d_1 .. d_5 DOT`` (7 tokens) inserted after the first ``p`` of them, then the question token, then the answer:

    inputs  = filler[:p]  MARK d_1..d_5 DOT  filler[p:]  ASK  d_1 .. d_4
    targets = IGNORE x (L - 5)                                d_1 .. d_5

Depth. The insertion point is ``p = round(depth * F)``: depth 0 puts the key first, depth 1 right before the
question. Training draws ``p`` uniformly from ``0 .. F`` at the training length; evaluation has one split per depth
``{0, 0.25, 0.5, 0.75, 1}`` ("depth0.00" .. "depth1.00") so results keep the depth x length grid, plus a first
split "uniform" (depth drawn as in training) that fills a result's main columns.

Digits are i.i.d. uniform, so the key is uniform over the ``10^5`` five-digit strings; metric: exact match of the
five digits; chance level ``1e-5``.
"""

from __future__ import annotations

from typing import ClassVar

import torch
from torch import Tensor

from pebench.tasks.base import Batch, Task
from pebench.tasks.common import answer_layout

N_DIGITS = 5
DOT, PASSKEY, NEEDLE, QUERY, QUESTION = 10, 11, 12, 13, 14
FIRST_WORD, N_WORDS = 15, 48
VOCAB = FIRST_WORD + N_WORDS
DEPTHS = (0.0, 0.25, 0.5, 0.75, 1.0)
OVERHEAD = 2 * N_DIGITS + 2  # MARK + digits + DOT, ASK, and the answer's digits after ASK


def depth_split(depth: float) -> str:
    return f"depth{depth:.2f}"


class HaystackTask(Task):
    """A key statement hidden in filler; subclasses define the filler and the marker/question tokens."""

    metric = "exact_match"
    eval_splits = ("uniform", *(depth_split(d) for d in DEPTHS))
    train_length = 64
    min_length = OVERHEAD + 4
    mark: ClassVar[int] = PASSKEY
    ask: ClassVar[int] = QUERY

    @property
    def vocab_size(self) -> int:
        return VOCAB

    @property
    def chance_level(self) -> float:
        return 10.0**-N_DIGITS

    def filler(self, batch_size: int, n_tokens: int, generator: torch.Generator) -> Tensor:
        """``(batch_size, n_tokens)`` filler tokens."""
        raise NotImplementedError

    def split_depth(self, split: str) -> float | None:
        """The depth of an evaluation split (None: uniform, as in training)."""
        for d in DEPTHS:
            if split == depth_split(d):
                return d
        return None

    def sample(self, batch_size: int, length: int, generator: torch.Generator, split: str = "train") -> Batch:
        self.check_length(length)
        self.check_split(split)
        f = length - OVERHEAD
        hay = self.filler(batch_size, f, generator)
        digits = torch.randint(0, 10, (batch_size, N_DIGITS), generator=generator)
        depth = self.split_depth(split)
        if depth is None:
            p = torch.randint(0, f + 1, (batch_size,), generator=generator)
        else:
            p = torch.full((batch_size,), int(round(depth * f)))
        statement = torch.cat([torch.full((batch_size, 1), self.mark), digits, torch.full((batch_size, 1), DOT)], dim=1)
        width = f + statement.shape[1]
        t = torch.arange(width)[None, :]
        pp = p[:, None]
        # source index into the filler (before and after the statement) or into the statement
        from_hay = torch.where(t < pp, t, t - statement.shape[1]).clamp(0, f - 1)
        from_stmt = (t - pp).clamp(0, statement.shape[1] - 1)
        in_stmt = (t >= pp) & (t < pp + statement.shape[1])
        stmt_tokens = statement.gather(1, from_stmt.expand(batch_size, -1))
        prompt = torch.where(in_stmt, stmt_tokens, hay.gather(1, from_hay.expand(batch_size, -1)))
        return Batch(*answer_layout(prompt, digits, self.ask))
