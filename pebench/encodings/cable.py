"""CABLE, context-aware biases for length extrapolation (Veisi, Amirzadeh and Mansourian, "Context-aware Biases for
Length Extrapolation", 2025, arXiv:2503.08067): ALiBi's linear distance penalty with the slope made token-specific,
computed per head and layer from the hidden states.

Each head h of each layer has a non-negative slope per token from the hidden state x_t entering the layer's attention
(after its norm, the input of the q, k, v projections), and the bias of query i on key j is minus the sum of the
slopes of the tokens after j up to i:

    m_t   = softplus(w_h·x_t + c_h),
    B_ij  = -Σ_{l=j+1}^{i} m_l = b_i - b_j   with b_i = -Σ_{l<=i} m_l   (B_ii = 0),

added to the scaled scores before the softmax. A slope constant in t, m_t = m, gives B_ij = -m·(i - j): ALiBi with
slope m, so ALiBi is the special case of a token-independent slope (w_h = 0, c_h = softplus⁻¹(m_h)).

Source: the formula is taken from the authors' released code (github.com/axiomlab/Cable, ``src/Cable.py``: a linear
layer ``h_attn`` from the width to one value per head, ``b = cumsum(-softplus(h_attn(x)))`` over the tokens, bias
``b_i - b_j`` plus the causal mask); the method section of the paper itself could not be read here, so its equation
numbers are not given. Parameters per layer: w ``(heads, d_model)`` and c ``(heads,)``, initialised as that code
(``nn.Linear`` under nanoGPT's init): w ~ N(0, 0.02²), c = 0, so every slope starts near softplus(0) = ln 2 ≈ 0.69
(``init=zero``, the default). ``init=alibi`` (not from the paper; a pebench option) starts c_h at softplus⁻¹ of
ALiBi's slope of head h (2^(-8h/H) for H heads a power of two), so with w near 0 training starts from ALiBi.
The released code also leaves the q·k scores unscaled (it divides by sqrt(C / n_embd) = 1); here they keep the
model's 1/sqrt(d_h), as every other encoding's.

Relation to FoX (``fox``): -softplus(z) = log σ(-z), so CABLE with (w, c) is FoX with forget gates σ(-(w·x + c)), the
same family of biases with the gate's sign flipped; with ``init=zero`` the two start from the same distribution
(w symmetric about 0, c = 0). Both are kept because they are two published methods; a difference in their scores at
those defaults would be seed noise, not method.

The encoding plugs in through :meth:`~pebench.encodings.base.PositionalEncoding.attn_bias` with ``hidden=``
(``reads_hidden``) and gives the same bias per key with ``per_key=True`` beside it (-b_j = Σ_{l<=j} m_l), so the
model's blocked attention never builds a ``(B, H, T, T)`` bias. Index positions are not used, so shifting them
changes nothing.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from pebench.encodings.alibi import alibi_slopes
from pebench.encodings.base import EncodingContext, PositionalEncoding
from pebench.encodings.fox import forget_bias
from pebench.encodings.registry import register
from pebench.options import Option


def inverse_softplus(m: float) -> float:
    """The z with softplus(z) = ln(1 + e^z) = m (m > 0)."""
    return m + math.log(-math.expm1(-m))  # ln(e^m - 1), stable for small and large m


@register
class CABLE(PositionalEncoding):
    name = "cable"
    family = "content"
    position_indexed = False
    description = "context-aware ALiBi: bias -Σ_{l=j+1}^{i} softplus(w·x_l + c) per head and layer, from hidden states"
    paper = "Veisi et al. 2025, arXiv:2503.08067"
    options = {"init": Option("zero", "initial slope bias c: zero (slopes near ln 2, as the authors' code) or alibi "
                                      "(ALiBi's slope per head)", type=str, choices=("zero", "alibi"))}  # fmt: skip

    def __init__(self, ctx: EncodingContext, **options: object) -> None:
        super().__init__(ctx, **options)
        self.slope_weight = nn.Parameter(torch.randn(ctx.n_layers, ctx.n_heads, ctx.d_model) * 0.02)
        if self.opts["init"] == "alibi":
            start = torch.tensor([inverse_softplus(m) for m in alibi_slopes(ctx.n_heads)])
        else:
            start = torch.zeros(ctx.n_heads)
        self.slope_bias = nn.Parameter(start.expand(ctx.n_layers, ctx.n_heads).clone())

    def slopes(self, x: Tensor, layer: int) -> Tensor:
        """m ``(B, H, T)`` of the hidden states ``x`` ``(B, T, d_model)`` entering layer ``layer``."""
        logits = x.float() @ self.slope_weight[layer].float().t() + self.slope_bias[layer].float()  # (B, T, H)
        return F.softplus(logits).transpose(-1, -2)

    def attn_bias(self, q: Tensor, k: Tensor, positions: Tensor, layer: int, *, hidden: Tensor | None = None,
                  per_key: bool = False) -> Tensor | None:  # fmt: skip
        if hidden is None:  # no bias from positions or q, k: all of it comes from the hidden states
            return None
        if per_key:
            return self.slopes(hidden, layer).cumsum(-1)  # -b_j: the row's b_i drops out of the softmax
        return forget_bias(-self.slopes(hidden, layer))  # b_i - b_j with b = cumsum(-m)
