"""xPos, the extrapolatable rotary embedding (Sun et al., "A Length-Extrapolatable Transformer", ACL 2023,
arXiv:2212.10554, §3.2).

RoPE's rotation plus an exponential decay with distance. For the pair i = 0 .. d/2 - 1,

    ζ_i = (2i/d + γ) / (1 + γ),   γ = 0.4,   scale_base B = 512,
    q_n ← R(n θ_i) q_n · ζ_i^( n/B),     k_m ← R(m θ_i) k_m · ζ_i^(-m/B),

so q_n·k_m carries the factor ζ_i^((n-m)/B) <= 1 for the causal case n >= m: a decay with distance that depends on
n - m only (the encoding is relative). It is defined for causal attention only; the model is causal.

Overflow guard. ζ_i^(n/B) and ζ_i^(-m/B) separately under- and overflow for long sequences (the smallest ζ is
0.4/1.4, so ζ^(-m/B) exceeds float32's range near m ≈ 36 000 and float16's near m ≈ 4 500; this has been reported
for implementations that use absolute positions). Since only n - m matters, positions are first centred on the
middle c of each sequence's positions (as the authors' implementation centres 0..T-1 on T/2): exponents (n - c)/B
then stay bounded by half the span. Longer spans than float32 can hold raise a one-line error instead of returning
inf or NaN.
"""

from __future__ import annotations

import torch
from torch import Tensor

from pebench.encodings.base import EncodingContext
from pebench.encodings.registry import register
from pebench.encodings.rope import RoPE, positions_for_heads, rotate_pairs
from pebench.errors import LengthError
from pebench.options import Option

MAX_LOG_SCALE = 80.0
"""Largest |log| of a per-position scale allowed (float32 overflows at about 88.7)."""


def xpos_zeta(dim: int, gamma: float = 0.4) -> Tensor:
    """ζ_i = (2i/d + γ) / (1 + γ) for i = 0..d/2-1, float64."""
    return (torch.arange(0, dim, 2, dtype=torch.float64) / dim + gamma) / (1.0 + gamma)


@register
class XPos(RoPE):
    name = "xpos"
    family = "rotary"
    description = "RoPE with per-frequency exponential decay ζ^((n-m)/512) (causal only), centred against overflow"
    paper = "Sun et al. 2023, arXiv:2212.10554"
    options = {
        **RoPE.options,
        "scale_base": Option(512.0, "B in ζ^(n/B)", low=0.0, low_open=True),
        "gamma": Option(0.4, "γ in ζ_i = (2i/d + γ)/(1 + γ)", low=0.0, low_open=True),
    }

    def __init__(self, ctx: EncodingContext, **options: object) -> None:
        super().__init__(ctx, **options)
        self.register_buffer("log_zeta", xpos_zeta(ctx.head_dim, self.opts["gamma"]).log(), persistent=False)

    def transform_qk(self, q: Tensor, k: Tensor, positions: Tensor, layer: int) -> tuple[Tensor, Tensor]:
        ang = self.angles(positions, layer)
        cos, sin = torch.cos(ang), torch.sin(ang)
        p = positions.to(torch.float64)
        centre = (p.amin(-1, keepdim=True) + p.amax(-1, keepdim=True)) / 2
        rel = positions_for_heads(p - centre).to(torch.float64)  # (T, 1) or (B, 1, T, 1)
        log_scale = rel / self.opts["scale_base"] * self.log_zeta.to(device=rel.device)
        worst = float(log_scale.abs().max()) if log_scale.numel() else 0.0
        if worst > MAX_LOG_SCALE:
            span = int(p.amax() - p.amin())
            limit = int(2 * MAX_LOG_SCALE * self.opts["scale_base"] / -float(self.log_zeta.min()))
            raise LengthError(f"xpos: a span of {span} positions overflows float32; valid spans: <= {limit}")
        up = torch.exp(log_scale).to(torch.float32)
        down = torch.exp(-log_scale).to(torch.float32)
        return rotate_pairs(q, cos * up, sin * up), rotate_pairs(k, cos * down, sin * down)

