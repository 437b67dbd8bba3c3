"""CARoPE, context-aware rotary position embedding (Veisi, Fartoot & Amirzadeh, "Context-aware Rotary Position
Embedding", 2025, arXiv:2507.23083, §2 "Proposed Method").

RoPE (Su et al., arXiv:2104.09864, eq. 34) turns pair i of q and k at position m by m·θ^i, with one base frequency
θ = base^(-2/d) and i = 0 .. d/2 - 1. CARoPE makes the base frequency a bounded function of each token's hidden
state, one per head, and replaces m·θ^i by a sum of the frequencies of the tokens so far:

    f_h(x_t)      = 1 / (1 + softplus(w_h·x_t + b_h))     ∈ (0, 1),
    θ_{h,i}(x_t)  = f_h(x_t)^i,                             i = 0 .. d/2 - 1,
    φ_{h,i}(m)    = Σ_{t=1}^{m} θ_{h,i}(x_t),

and pair i of head h's query and key at token m (counted from 1) is turned by φ_{h,i}(m) with RoPE's rotation. The
score q_m·k_n then sees φ(m) - φ(n) = Σ_{t=n+1}^{m} f(x_t)^i: the tokens in between set the angle, not the
distance. A frequency f constant over the tokens gives φ_i(m) = m·f^i, RoPE's angles with θ = f (tested); pair 0
(f^0 = 1) always turns by one radian a token, as RoPE's first pair does.

Choices, and what we could not verify. The paper's full text was not available to us: its abstract confirms
head-specific frequencies from "a bounded transformation of token embeddings" and input-dependent phases in the
rotary mechanism, and a third-party summary writes RoPE as θ_1 = 10000^(-2/d), θ_i = θ_1^i, φ_i(m) = m·θ_i, with
CARoPE's learned frequency projection modulating that phase accumulation. The formulas above (the transform
1 / (1 + softplus(·)), the powers f^i, the sum over tokens) are the paper's §2 as we know it, but we could not
re-check them against its text, nor their equation numbers, whether the exponent starts at 0 or 1 (we start at 0,
so that a constant f is exactly RoPE), whether the projection is shared by the layers (here each layer has its own,
read from the hidden state entering its attention, after its norm, as FoX's gates) or carries a bias. The paper
says CARoPE is initialised from RoPE; here the bias b_h starts at softplus⁻¹(base^(2/d) - 1), so that
f = base^(-2/d), RoPE's θ, where w_h·x_t = 0, and w_h starts at N(0, 0.02²) (``base`` 10000 as RoPE's). The phases
are float32 (as RoPE's angles here).

The encoding plugs in through :meth:`~pebench.encodings.base.PositionalEncoding.transform_qk` with ``hidden=``
(``qk_from_hidden``); index positions are not read (the sum runs over the tokens of the sequence), so shifting them
changes nothing.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from pebench.encodings.base import EncodingContext, PositionalEncoding
from pebench.encodings.registry import register
from pebench.encodings.rope import rotate_pairs
from pebench.options import Option


def inverse_softplus(y: float) -> float:
    """b with softplus(b) = y > 0, stable for small and large y."""
    return y + math.log(-math.expm1(-y))


def carope_phases(log_f: Tensor, pairs: int) -> Tensor:
    """φ_i(m) = Σ_{t<=m} f_t^i from log frequencies ``(..., T)``: ``(..., T, pairs)``."""
    powers = torch.arange(pairs, device=log_f.device, dtype=log_f.dtype)
    return torch.exp(log_f[..., None] * powers).cumsum(-2)


@register
class CARoPE(PositionalEncoding):
    name = "carope"
    family = "rotary"
    position_indexed = False
    description = ("context-aware RoPE: pair i turned by Σ_{t<=m} f_h(x_t)^i with a per-head, per-token frequency "
                   "f_h = 1/(1 + softplus(w_h·x_t + b_h))")  # fmt: skip
    paper = "Veisi et al. 2025, arXiv:2507.23083"
    options = {"base": Option(10000.0, "RoPE base: the frequencies start at RoPE's base^(-2/head_dim)", low=1.0,
                              low_open=True)}  # fmt: skip

    def __init__(self, ctx: EncodingContext, **options: object) -> None:
        super().__init__(ctx, **options)
        if ctx.head_dim % 2:
            raise ValueError(f"{self.name}: head_dim must be even, got {ctx.head_dim}")
        start = inverse_softplus(self.opts["base"] ** (2.0 / ctx.head_dim) - 1.0)  # f = base^(-2/d) at w·x = 0
        self.freq_weight = nn.Parameter(torch.randn(ctx.n_layers, ctx.n_heads, ctx.d_model) * 0.02)
        self.freq_bias = nn.Parameter(torch.full((ctx.n_layers, ctx.n_heads), start))

    def log_frequencies(self, x: Tensor, layer: int) -> Tensor:
        """log f ``(B, H, T)`` of the hidden states ``x`` ``(B, T, d_model)`` entering layer ``layer``."""
        logits = x.float() @ self.freq_weight[layer].float().t() + self.freq_bias[layer].float()  # (B, T, H)
        return -torch.log1p(F.softplus(logits)).transpose(-1, -2)

    def transform_qk(self, q: Tensor, k: Tensor, positions: Tensor, layer: int, *, hidden: Tensor | None = None
                     ) -> tuple[Tensor, Tensor]:  # fmt: skip
        if hidden is None:  # the phases come from the hidden states alone (the model always passes them)
            return q, k
        phases = carope_phases(self.log_frequencies(hidden, layer), q.shape[-1] // 2)  # (B, H, T, d/2)
        cos, sin = torch.cos(phases), torch.sin(phases)
        return rotate_pairs(q, cos, sin), rotate_pairs(k, cos, sin)
