"""Sinusoidal absolute positional encoding (Vaswani et al., "Attention Is All You Need", NeurIPS 2017, §3.5).

    PE(pos, 2i)   = sin(pos / base^(2i / d))
    PE(pos, 2i+1) = cos(pos / base^(2i / d))

with base = 10000, added to the token embeddings. Because it is absolute, shifting every position changes the
model's output.
"""

from __future__ import annotations

import torch
from torch import Tensor

from pebench.encodings.base import PositionalEncoding
from pebench.encodings.registry import register
from pebench.options import Option


def sinusoid_table(positions: Tensor, d_model: int, base: float = 10000.0) -> Tensor:
    """The Vaswani et al. table for ``positions`` (any shape): ``(*positions.shape, d_model)`` in float32."""
    i = torch.arange(0, d_model, 2, dtype=torch.float64, device=positions.device)
    inv_freq = base ** (-i / d_model)
    angles = positions.to(torch.float64)[..., None] * inv_freq
    table = torch.zeros(*positions.shape, d_model, dtype=torch.float64, device=positions.device)
    table[..., 0::2] = torch.sin(angles)
    table[..., 1::2] = torch.cos(angles[..., : d_model // 2])
    return table.to(torch.float32)


@register
class Sinusoidal(PositionalEncoding):
    name = "sinusoidal"
    family = "absolute"
    description = "fixed sin/cos absolute encoding added to the token embeddings"
    paper = "Vaswani et al. 2017, arXiv:1706.03762"
    options = {"base": Option(10000.0, "wavelength base", low=1.0, low_open=True)}

    def embed(self, positions: Tensor) -> Tensor:
        return sinusoid_table(positions, self.ctx.d_model, self.opts["base"])
