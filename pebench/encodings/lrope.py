"""Learned-rate RoPE (from the positional-encoding studies this project grew out of): RoPE (Su et al. 2021,
arXiv:2104.09864) whose per-frequency rotation rates are trainable, one scale vector per layer.

In layer l the pair (2i, 2i+1) at position m is rotated by the angle

    m · θ_i · s_{l,i},   θ_i = base^(-2i/d),   s_{l,i} learned, initialised to 1 (so it starts as RoPE).

Learning a multiplicative scale rather than θ_i itself keeps every rate's update relative to its size (θ spans four
orders of magnitude). For any value of s the map stays a rotation by an angle linear in m, so q_m·k_n still depends
only on n - m: the encoding is relative at every point of training.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from pebench.encodings.base import EncodingContext
from pebench.encodings.registry import register
from pebench.encodings.rope import RoPE, positions_for_heads


@register
class LearnedRateRoPE(RoPE):
    name = "lrope"
    family = "rotary"
    description = "RoPE with learned per-frequency rates (one scale vector per layer, initialised to RoPE)"
    paper = "positional-encoding studies; Su et al. 2021, arXiv:2104.09864"

    def __init__(self, ctx: EncodingContext, **options: object) -> None:
        super().__init__(ctx, **options)
        self.rate_scale = nn.Parameter(torch.ones(ctx.n_layers, ctx.head_dim // 2))

    def angles(self, positions: Tensor, layer: int) -> Tensor:
        rates = self._inv_freq.to(positions.device) * self.rate_scale[layer].float()
        return positions_for_heads(positions) * rates
