"""KERPLE, logarithmic variant (Chi et al., "KERPLE: Kernelized Relative Positional Embedding for Length
Extrapolation", NeurIPS 2022, arXiv:2205.09921, eq. for the "log" kernel).

Each head h of each layer adds to the score of query i on key j

    b_h(i, j) = -p_h · log(1 + a_h · |i - j|),     p_h, a_h > 0 learned,

a conditionally positive definite kernel of the distance; positivity is kept by clamping p and a to >= 0.01 as the
authors do. Initialisation (ours): p_h = 1 and a_h = 2^(-4h/H), h = 1 .. H, so heads start with different reach
(1/2 down to 1/16, all above the clamp).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from pebench.encodings.base import EncodingContext, PositionalEncoding, PositionMemo, relative_distances
from pebench.encodings.registry import register

MIN_PARAM = 0.01


@register
class KerpleLog(PositionalEncoding):
    name = "kerple"
    family = "bias"
    description = "learned log-distance bias -p·log(1 + a·|i-j|), p and a positive per head and layer"
    paper = "Chi et al. 2022, arXiv:2205.09921"

    def __init__(self, ctx: EncodingContext, **options: object) -> None:
        super().__init__(ctx, **options)
        slopes = 2.0 ** (-4.0 * torch.arange(1, ctx.n_heads + 1, dtype=torch.float32) / ctx.n_heads)
        self.p = nn.Parameter(torch.ones(ctx.n_layers, ctx.n_heads))
        self.a = nn.Parameter(slopes.repeat(ctx.n_layers, 1))
        self._distance = PositionMemo(lambda pos: relative_distances(pos).abs().to(torch.float32))

    def attn_bias(self, q: Tensor, k: Tensor, positions: Tensor, layer: int) -> Tensor:
        dist = self._distance(positions)  # |i - j|, computed once per length
        p = self.p[layer].clamp(min=MIN_PARAM)[:, None, None]
        a = self.a[layer].clamp(min=MIN_PARAM)[:, None, None]
        return -p * torch.log1p(a * dist.to(p.device))
