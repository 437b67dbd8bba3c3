"""T5 relative position bias (Raffel et al., "Exploring the Limits of Transfer Learning with a Unified Text-to-Text
Transformer", JMLR 2020, §2.1), causal (unidirectional) form.

A learned scalar per head and bucket is added to the score of query i on key j. With n = max(i - j, 0),
N = 32 buckets, max_distance D = 128 and E = N/2 = 16 exact buckets:

    bucket(n) = n                                                      if n < E
              = min(N - 1, E + trunc(ln(n/E) / ln(D/E) · (N - E)))      otherwise

so distances 0..15 get their own bucket, 16..127 share 16 log-spaced buckets, and every distance >= 128 falls in
the last. As in T5, one table (N x heads) is shared by all layers, initialised N(0, init_std²).
Examples: bucket(16) = 16, bucket(20) = 17, bucket(32) = 21, bucket(64) = 26, bucket(127) = 31, bucket(1000) = 31.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from pebench.encodings.base import EncodingContext, PositionalEncoding, PositionMemo, relative_distances
from pebench.encodings.registry import register
from pebench.options import Option


def t5_bucket(distance: Tensor, num_buckets: int = 32, max_distance: int = 128) -> Tensor:
    """Causal T5 bucket of the distance ``i - j`` (negative distances, the future, go to bucket 0)."""
    n = distance.clamp(min=0)
    exact = num_buckets // 2
    is_small = n < exact
    large = exact + (
        torch.log(n.float().clamp(min=1) / exact) / math.log(max_distance / exact) * (num_buckets - exact)
    ).to(torch.long)
    large = large.clamp(max=num_buckets - 1)
    return torch.where(is_small, n.to(torch.long), large)


@register
class T5Bias(PositionalEncoding):
    name = "t5"
    family = "bias"
    description = "learned per-head bias on log-spaced distance buckets (32 buckets, max distance 128, causal)"
    paper = "Raffel et al. 2020, arXiv:1910.10683"
    bias_shared_by_layers = True  # one table for all layers
    options = {
        "num_buckets": Option(32, "number of buckets N", type=int, low=2),
        "max_distance": Option(128, "distance D from which every distance shares the last bucket", type=int, low=2),
        "init_std": Option(0.02, "std of the table's normal initialisation", low=0.0),
    }

    def __init__(self, ctx: EncodingContext, **options: object) -> None:
        super().__init__(ctx, **options)
        self.bias = nn.Embedding(self.opts["num_buckets"], ctx.n_heads)
        nn.init.normal_(self.bias.weight, std=self.opts["init_std"])
        self._buckets = PositionMemo(
            lambda pos: t5_bucket(relative_distances(pos), self.opts["num_buckets"], self.opts["max_distance"])
        )

    def attn_bias(self, q: Tensor, k: Tensor, positions: Tensor, layer: int) -> Tensor:
        buckets = self._buckets(positions)  # a function of the positions only: computed once per length
        values = self.bias(buckets.to(self.bias.weight.device))  # (T, T, H) or (B, 1, T, T, H)
        return values.movedim(-1, -3) if values.dim() == 3 else values.squeeze(1).movedim(-1, 1)
