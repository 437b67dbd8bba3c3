"""FoX, the Forgetting Transformer (Lin et al., "Forgetting Transformer: Softmax Attention with a Forget Gate", ICLR
2025, arXiv:2503.02130, §2): softmax attention down-weighted by a data-dependent forget gate, with no positional
encoding besides it.

Each head of each layer has a scalar forget gate per token from the hidden state x_t entering the layer's attention
(after its norm, the input of the q, k, v projections):

    f_t  = σ(w_f·x_t + b_f),
    D_ij = Σ_{l=j+1}^{i} log f_l = c_i - c_j   with c_i = Σ_{l<=i} log f_l   (D_ii = 0),

and D is added to the scaled scores before the softmax: o_i = Σ_{j<=i} softmax_j(q_i·k_j/sqrt(d_h) + D_ij) v_j. A
gate constant in t, f_t = f, gives D_ij = -(i - j)·(-log f): ALiBi with slope -log f per head, so FoX is a
data-dependent ALiBi.

Parameters: per layer, w_f ``(heads, d_model)`` and b_f ``(heads,)``. Initialisation as the authors' released code
(``fgate_proj = nn.Linear(hidden_size, num_heads, bias=True)`` under their model init): w_f ~ N(0, 0.02²) and
b_f = 0, so every gate starts near σ(0) = 1/2 (a strong recency bias of about -0.69 per token that training can
lift). The paper's T_min/T_max bias initialisation is for its data-independent (bias-only or fixed) gates, not for
this data-dependent one; ``bias_init`` sets another starting b_f (e.g. 5: f ≈ 0.993). The "Pro" block's extras (output
gate, output norm, QK-norm, key/value shift) are not part of the encoding.

The encoding plugs in through :meth:`~pebench.encodings.base.PositionalEncoding.attn_bias` with ``hidden=``
(``reads_hidden``), and gives the same bias per key with ``per_key=True`` beside it: softmax ignores the row's constant
c_i, so D_ij and -c_j give the same attention, and the model builds the bias of each block of query rows from the
``(B, H, T)`` vector -c instead of a ``(B, H, T, T)`` tensor (docs/speed.md). Index positions are not used, so
shifting them changes nothing.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from pebench.encodings.base import EncodingContext, PositionalEncoding
from pebench.encodings.registry import register
from pebench.options import Option


def forget_bias(log_f: Tensor) -> Tensor:
    """``D_ij = Σ_{l=j+1}^{i} log f_l`` from log gates ``(..., T)``: ``(..., T, T)`` (entries j > i are -D_ji, to be
    masked by the caller)."""
    c = log_f.cumsum(-1)
    return c[..., :, None] - c[..., None, :]


@register
class FoX(PositionalEncoding):
    name = "fox"
    family = "content"
    position_indexed = False
    description = "forgetting attention: bias Σ_{l=j+1}^{i} log σ(w_f·x_l + b_f) per head from the hidden states"
    paper = "Lin et al. 2025, arXiv:2503.02130"
    options = {"bias_init": Option(0.0, "initial forget-gate bias b_f (0: gates start near 1/2, as the authors' code)",
                                   type=float)}

    def __init__(self, ctx: EncodingContext, **options: object) -> None:
        super().__init__(ctx, **options)
        self.gate_weight = nn.Parameter(torch.randn(ctx.n_layers, ctx.n_heads, ctx.d_model) * 0.02)
        self.gate_bias = nn.Parameter(torch.full((ctx.n_layers, ctx.n_heads), float(self.opts["bias_init"])))

    def log_gates(self, x: Tensor, layer: int) -> Tensor:
        """log f ``(B, H, T)`` of the hidden states ``x`` ``(B, T, d_model)`` entering layer ``layer``."""
        logits = x.float() @ self.gate_weight[layer].float().t() + self.gate_bias[layer].float()  # (B, T, H)
        return F.logsigmoid(logits).transpose(-1, -2)

    def attn_bias(self, q: Tensor, k: Tensor, positions: Tensor, layer: int, *, hidden: Tensor | None = None,
                  per_key: bool = False) -> Tensor | None:  # fmt: skip
        if hidden is None:  # no bias from positions or q, k: all of it comes from the hidden states
            return None
        if per_key:
            return -self.log_gates(hidden, layer).cumsum(-1)  # D_ij = c_i - c_j: the row's c_i drops out of the softmax
        return forget_bias(self.log_gates(hidden, layer))
