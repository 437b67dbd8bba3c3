"""ALiBi, attention with linear biases (Press et al., "Train Short, Test Long: Attention with Linear Biases Enables
Input Length Extrapolation", ICLR 2022, §3).

No vector is added anywhere; each head h adds ``-m_h · (i - j)`` to the score of query i on key j (j <= i).
For n heads with n a power of two the slopes are the geometric sequence

    m_h = 2^(-8h / n),   h = 1 .. n

(8 heads: 1/2, 1/4, ..., 1/256). For other n the official implementation takes the 2^⌊log2 n⌋ slopes of the nearest
smaller power of two, then the first n - 2^⌊log2 n⌋ of every other slope of 2·2^⌊log2 n⌋ heads.

The bias is computed from positions, once, as ``(H, T, T)`` (never per batch element when positions are shared).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from pebench.encodings.base import EncodingContext, PositionalEncoding, PositionMemo, relative_distances
from pebench.encodings.registry import register


def alibi_slopes(n_heads: int) -> list[float]:
    """ALiBi head slopes for ``n_heads`` heads (Press et al. 2022 and their official interpolation)."""
    if n_heads <= 0:
        raise ValueError(f"alibi: n_heads must be positive, got {n_heads}")

    def power_of_two(n: int) -> list[float]:
        return [2.0 ** (-8.0 * h / n) for h in range(1, n + 1)]

    if math.log2(n_heads).is_integer():
        return power_of_two(n_heads)
    closest = 2 ** math.floor(math.log2(n_heads))
    return power_of_two(closest) + power_of_two(2 * closest)[0::2][: n_heads - closest]


@register
class ALiBi(PositionalEncoding):
    name = "alibi"
    family = "bias"
    description = "linear distance penalty on attention scores, one slope per head"
    paper = "Press et al. 2022, arXiv:2108.12409"
    bias_shared_by_layers = True

    def __init__(self, ctx: EncodingContext, **options: object) -> None:
        super().__init__(ctx, **options)
        self.register_buffer("slopes", torch.tensor(alibi_slopes(ctx.n_heads)), persistent=False)
        self._memo = PositionMemo(self.bias_of)

    def bias_of(self, positions: Tensor) -> Tensor:
        """``-m_h·|i - j|``: ``(H, T, T)``, or ``(B, H, T, T)`` for per-sample positions."""
        dist = relative_distances(positions).abs().to(torch.float32)
        return -self.slopes.to(dist.device)[:, None, None] * dist

    def attn_bias(self, q: Tensor, k: Tensor, positions: Tensor, layer: int) -> Tensor:
        return self._memo(positions)  # a function of the positions only: computed once per length
