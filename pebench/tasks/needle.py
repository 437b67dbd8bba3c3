"""Needle in a haystack: a 5-digit magic number hidden at a depth in varied filler, asked for at the end.

Source: the "needle in a haystack" test (Kamradt 2023, github.com/gkamradt/LLMTest_NeedleInAHaystack; used for
long-context evaluation, e.g. in Gemini 1.5, arXiv:2403.05530): a needle sentence ("the magic number is 12345")
inside a haystack of unrelated, varied text, and a question at the end. Layout, depths, tokens and metric:
:mod:`pebench.tasks.haystack`.

Filler: sentences of 3 to 8 words i.i.d. uniform over the 48 filler words, each closed by ``DOT``, concatenated and
cut to length -- unlike ``passkey`` the haystack never repeats, so the model cannot find the key as the one break in
a periodic pattern. The task length is the number of tokens.
"""

from __future__ import annotations

import torch
from torch import Tensor

from pebench.tasks.haystack import DOT, FIRST_WORD, N_WORDS, NEEDLE, QUESTION, HaystackTask
from pebench.tasks.registry import register

MIN_WORDS, MAX_WORDS = 3, 8


@register
class Needle(HaystackTask):
    name = "needle"
    version = "1"
    description = "5-digit magic number at depth 0-1 in varied filler; question at the end; exact match of digits"
    paper = "Kamradt 2023 (needle in a haystack); Gemini 1.5 report, arXiv:2403.05530"
    mark = NEEDLE
    ask = QUESTION

    def filler(self, batch_size: int, n_tokens: int, generator: torch.Generator) -> Tensor:
        words = torch.randint(FIRST_WORD, FIRST_WORD + N_WORDS, (batch_size, n_tokens), generator=generator)
        # sentence ends: positions whose running count of gaps hits the sentence lengths
        lengths = torch.randint(MIN_WORDS + 1, MAX_WORDS + 2, (batch_size, n_tokens // (MIN_WORDS + 1) + 2),
                                generator=generator)  # fmt: skip
        ends = lengths.cumsum(dim=1) - 1  # index of each DOT (a sentence of w words then DOT spans w + 1 tokens)
        is_dot = torch.zeros(batch_size, n_tokens + MAX_WORDS + 2, dtype=torch.bool)
        is_dot.scatter_(1, ends.clamp(max=is_dot.shape[1] - 1), True)
        return torch.where(is_dot[:, :n_tokens], DOT, words)
