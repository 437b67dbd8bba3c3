"""Passkey retrieval: a 5-digit key hidden at a depth in a repeated filler sentence.

Source: Mohtashami & Jaggi, "Landmark Attention: Random-Access Infinite Context Length for Transformers", 2023,
arXiv:2305.16300 (the filler is one sentence group repeated, "The grass is green. The sky is blue. The sun is
yellow. Here we go. There and back again."; the key statement "The pass key is 12345." sits inside it; the question
"What is the pass key?" follows). Layout, depths, tokens and metric: :mod:`pebench.tasks.haystack`.

Filler: the fixed 24-token cycle ``w0 w1 w2 w3 . w0 w4 w2 w5 . w0 w6 w2 w7 . w8 w9 w10 . w11 w12 w13 w14 .`` of word
tokens (a stand-in for the sentences above, with "the" and "is" shared), repeated from a uniformly random phase and
cut to length. The task length is the number of tokens.
"""

from __future__ import annotations

import torch
from torch import Tensor

from pebench.tasks.haystack import DOT, FIRST_WORD, PASSKEY, QUERY, HaystackTask
from pebench.tasks.registry import register

W = [FIRST_WORD + i for i in range(15)]
CYCLE = torch.tensor([W[0], W[1], W[2], W[3], DOT, W[0], W[4], W[2], W[5], DOT, W[0], W[6], W[2], W[7], DOT,
                      W[8], W[9], W[10], DOT, W[11], W[12], W[13], W[14], DOT])  # fmt: skip


@register
class Passkey(HaystackTask):
    name = "passkey"
    version = "1"
    description = "5-digit pass key at depth 0-1 in repeated filler; question at the end; exact match of digits"
    paper = "Mohtashami & Jaggi 2023, arXiv:2305.16300"
    mark = PASSKEY
    ask = QUERY

    def filler(self, batch_size: int, n_tokens: int, generator: torch.Generator) -> Tensor:
        phase = torch.randint(0, len(CYCLE), (batch_size, 1), generator=generator)
        return CYCLE[(phase + torch.arange(n_tokens)[None, :]) % len(CYCLE)]
