"""Sine-only absolute encoding (from the positional-encoding studies this project grew out of; a variant of
Vaswani et al., "Attention Is All You Need", NeurIPS 2017, §3.5, without the cosine half).

Every dimension k = 0 .. d-1 carries a sine, each at its own frequency:

    PE(pos, k) = sin(pos · base^(-k / d)),   base = 10000,

added to the token embeddings. Unlike the sin/cos pairs of the original, a shift of the position is not a linear
map of the vector (no cosine partner), and position 0 is the zero vector.
"""

from __future__ import annotations

import torch
from torch import Tensor

from pebench.encodings.base import PositionalEncoding
from pebench.encodings.registry import register
from pebench.options import Option


def sine_only_table(positions: Tensor, d_model: int, base: float = 10000.0) -> Tensor:
    """``sin(pos · base^(-k/d))`` for k = 0..d-1: ``(*positions.shape, d_model)`` in float32."""
    freq = base ** (-torch.arange(d_model, dtype=torch.float64, device=positions.device) / d_model)
    return torch.sin(positions.to(torch.float64)[..., None] * freq).to(torch.float32)


@register
class SineOnly(PositionalEncoding):
    name = "sinonly"
    family = "absolute"
    description = "absolute sin(pos·base^(-k/d)) on every dimension k, no cosine half"
    paper = "positional-encoding studies; variant of Vaswani et al. 2017, arXiv:1706.03762"
    options = {"base": Option(10000.0, "wavelength base", low=1.0, low_open=True)}

    def embed(self, positions: Tensor) -> Tensor:
        return sine_only_table(positions, self.ctx.d_model, self.opts["base"])
