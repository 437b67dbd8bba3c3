"""PoPE, polar coordinate positional embedding (Gopalakrishnan et al., "Decoupling the 'What' and 'Where' With
Polar Coordinate Positional Embeddings", 2025, arXiv:2509.10534).

Each of the d = head_dim components of q and k becomes a complex number whose magnitude is content only and whose
phase is position only:

    magnitudes  μ_c = softplus(q_c),  ν_c = softplus(k_c),        c = 0 .. d-1,
    phases      query at t: t·θ_c,   key at s: s·θ_c + δ_c,        θ_c = base^(-c/d)  (d frequencies, not d/2),
    score       Re Σ_c μ_c ν_c e^{i(tθ_c - sθ_c - δ_c)} = Σ_c μ_c ν_c cos((t - s)θ_c - δ_c),

with δ_c a learned phase bias per layer, head and frequency, clamped to [-2π, 0] and initialised to 0. The score
is realised as a real dot product of width 2d: q' = μ ⊙ [cos tθ, sin tθ], k' = ν ⊙ [cos(sθ + δ), sin(sθ + δ)]
(cos a cos b + sin a sin b = cos(a - b)), so q and k widen to 2·head_dim while v keeps head_dim. The logits keep the
usual 1/sqrt(head_dim) scale. The score depends on t - s only: PoPE is relative.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from pebench.encodings.base import EncodingContext, PositionalEncoding
from pebench.encodings.registry import register
from pebench.encodings.rope import positions_for_heads
from pebench.options import Option


def pope_freq(dim: int, base: float) -> Tensor:
    """θ_c = base^(-c/d) for c = 0..d-1, float32."""
    return (base ** (-torch.arange(dim, dtype=torch.float64) / dim)).to(torch.float32)


@register
class PoPE(PositionalEncoding):
    name = "pope"
    family = "rotary"
    description = "polar embedding: softplus magnitudes, position-only phases, learned key phase bias"
    paper = "Gopalakrishnan et al. 2025, arXiv:2509.10534"
    options = {"base": Option(10000.0, "frequency base", low=1.0, low_open=True)}

    def __init__(self, ctx: EncodingContext, **options: object) -> None:
        super().__init__(ctx, **options)
        self.register_buffer("freq", pope_freq(ctx.head_dim, self.opts["base"]), persistent=False)
        self.phase_bias = nn.Parameter(torch.zeros(ctx.n_layers, ctx.n_heads, ctx.head_dim))

    @property
    def qk_dim(self) -> int:
        return 2 * self.ctx.head_dim

    def delta(self, layer: int) -> Tensor:
        """δ of ``layer`` clamped to [-2π, 0]: ``(H, 1, d)``."""
        return self.phase_bias[layer].clamp(-2 * math.pi, 0.0)[:, None, :]

    def transform_qk(self, q: Tensor, k: Tensor, positions: Tensor, layer: int) -> tuple[Tensor, Tensor]:
        phase = positions_for_heads(positions) * self.freq.to(positions.device)  # (T, d) or (B, 1, T, d)
        key_phase = phase.unsqueeze(-3) if phase.dim() == 2 else phase
        key_phase = key_phase + self.delta(layer).float()  # (H, T, d) or (B, H, T, d)
        mu, nu = F.softplus(q.float()), F.softplus(k.float())
        q2 = torch.cat((mu * torch.cos(phase), mu * torch.sin(phase)), dim=-1)
        k2 = torch.cat((nu * torch.cos(key_phase), nu * torch.sin(key_phase)), dim=-1)
        return q2.to(q.dtype), k2.to(k.dtype)
