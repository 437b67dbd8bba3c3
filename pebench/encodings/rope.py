"""Rotary position embedding, RoPE (Su et al., "RoFormer: Enhanced Transformer with Rotary Position Embedding",
arXiv:2104.09864, eq. 34).

Each pair of dimensions (2i, 2i+1) of q and k at position m is rotated by the angle m·θ_i with

    θ_i = base^(-2i / d),   i = 0 .. d/2 - 1,   base = 10000,

    [x'_{2i}  ]   [cos mθ_i  -sin mθ_i] [x_{2i}  ]
    [x'_{2i+1}] = [sin mθ_i   cos mθ_i] [x_{2i+1}].

A rotation preserves norms, and R(m)ᵀR(n) = R(n - m), so q_m·k_n depends on the positions only through n - m.
Angles are computed in float32 (float64 for the frequencies) and cast to q's dtype only at the end, since low
precision angles at large positions are a known source of error.

Subclasses (scaled variants) override :meth:`RoPE.inv_freq` or :meth:`RoPE.angles`.
"""

from __future__ import annotations

import torch
from torch import Tensor

from pebench.encodings.base import PositionalEncoding
from pebench.encodings.registry import register
from pebench.options import Option


def rope_inv_freq(dim: int, base: float) -> Tensor:
    """θ_i = base^(-2i/dim) for i = 0..dim/2-1, float32."""
    return (base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)).to(torch.float32)


def rotate_pairs(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """Rotate each pair (x_{2i}, x_{2i+1}) by the angle whose cos/sin are given (broadcast over ``x[..., ::2]``).

    The pair is read as the complex number x_{2i} + i·x_{2i+1} and multiplied by cos + i·sin: one complex product
    instead of four real ones and a stack (measured 3-5x faster forward+backward on CPU than the real form).
    """
    pairs = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2).contiguous())
    return torch.view_as_real(pairs * torch.complex(cos.float(), sin.float())).flatten(-2).to(x.dtype)


def positions_for_heads(positions: Tensor) -> Tensor:
    """Positions as float32, ``(T,)`` -> ``(T, 1)`` or ``(B, T)`` -> ``(B, 1, T, 1)``, ready to multiply frequencies."""
    p = positions.to(torch.float32)
    return p[:, None] if p.dim() == 1 else p[:, None, :, None]


@register
class RoPE(PositionalEncoding):
    name = "rope"
    family = "rotary"
    description = "rotary embedding: q and k rotated by position-dependent angles"
    paper = "Su et al. 2021, arXiv:2104.09864"
    options = {"base": Option(10000.0, "frequency base", low=1.0, low_open=True)}

    def __init__(self, ctx, **options) -> None:  # type: ignore[no-untyped-def]
        super().__init__(ctx, **options)
        if ctx.head_dim % 2:
            raise ValueError(f"{self.name}: head_dim must be even, got {ctx.head_dim}")
        self.register_buffer("_inv_freq", self.inv_freq(), persistent=False)

    def inv_freq(self) -> Tensor:
        """Frequencies θ_i; scaled variants override this."""
        return rope_inv_freq(self.ctx.head_dim, self.opts["base"])

    def angles(self, positions: Tensor, layer: int) -> Tensor:
        """m·θ_i for every position: ``(T, d/2)`` or ``(B, 1, T, d/2)``."""
        return positions_for_heads(positions) * self._inv_freq.to(positions.device)

    def transform_qk(self, q: Tensor, k: Tensor, positions: Tensor, layer: int) -> tuple[Tensor, Tensor]:
        ang = self.angles(positions, layer)
        cos, sin = torch.cos(ang), torch.sin(ang)
        return rotate_pairs(q, cos, sin), rotate_pairs(k, cos, sin)
