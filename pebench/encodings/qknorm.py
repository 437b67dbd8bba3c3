"""NoPE with QK-norm: no positional encoding, and queries and keys RMS-normalised per head before their dot product.

QK-norm (Henry et al., "Query-Key Normalization for Transformers", Findings of EMNLP 2020, arXiv:2010.04245)
normalises q and k so that a score is a scaled cosine similarity and cannot grow without bound. Henry et al. divide
by the L2 norm and learn one scalar in place of 1/√d; the form used here is the one of recent LLMs (a per-dimension
RMSNorm of each head's query and key, with a learned gain): for the query or key x ∈ R^d of one head at one position,

    RMS(x) = sqrt(mean_j x_j² + ε),   ε = 1e-6,
    x' = x / RMS(x) ⊙ g_l,            g_l ∈ R^d learned, one for q and one for k per layer l, initialised to 1,

and the scores stay q'·k' / √d. Without the gain, x' has RMS 1 (norm √d, up to ε) in every head at every
position, so a scaled score lies within ±√d·max|g_q|·max|g_k|: bounded by the gains, not by the activations.

Why with NoPE. A NoPE model's order information comes only from the causal mask (see :mod:`pebench.encodings.nope`),
and its attention tends to spread out ("distract") at lengths beyond training (Wang et al. 2024, arXiv:2404.12224).
Yang et al. 2025 ("Rope to Nope and Back Again", arXiv:2501.18795) compare RoPE, NoPE and QK-Norm models on long
contexts, and Khan et al. 2026 ("Fractional Rotation, Full Potential?", arXiv:2603.11611) report that QK-Norm
steadies NoPE models whose training is otherwise unstable (converging to a higher loss). This encoding is that
combination as one pebench encoding: a transform of q and k that reads no position, so it goes through the
``transform_qk`` hook like any other. Like NoPE it is not position-indexed and has NoPE's default depth
(:attr:`NoPE.default_layers` blocks).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from pebench.encodings.base import EncodingContext, PositionalEncoding
from pebench.encodings.nope import NoPE
from pebench.encodings.registry import register

EPS = 1e-6


def rms_normalise(x: Tensor, gain: Tensor, eps: float = EPS) -> Tensor:
    """x / sqrt(mean(x², last dim) + ε) ⊙ gain, computed in float32 and returned in x's dtype."""
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * gain.float()).to(x.dtype)


@register
class NoPEQKNorm(PositionalEncoding):
    name = "nope_qknorm"
    family = "none"
    position_indexed = False
    position_free = True
    default_layers = NoPE.default_layers
    description = (f"no positional encoding; q and k RMS-normalised per head with a learned gain "
                   f"({NoPE.default_layers} blocks unless --layers)")
    paper = "Henry et al. 2020, arXiv:2010.04245 (QK-norm); Kazemnejad et al. 2023, arXiv:2305.19466 (NoPE)"

    def __init__(self, ctx: EncodingContext, **options: Any) -> None:
        super().__init__(ctx, **options)
        self.q_gain = nn.Parameter(torch.ones(ctx.n_layers, ctx.head_dim))
        self.k_gain = nn.Parameter(torch.ones(ctx.n_layers, ctx.head_dim))

    def transform_qk(self, q: Tensor, k: Tensor, positions: Tensor, layer: int) -> tuple[Tensor, Tensor]:
        return rms_normalise(q, self.q_gain[layer]), rms_normalise(k, self.k_gain[layer])

    def extra_config(self) -> dict[str, Any]:
        return {"qk_norm": f"RMS over head_dim, eps {EPS:g}, learned gain per layer for q and for k"}
