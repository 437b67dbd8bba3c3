"""TAPE, contextualized equivariant position encoding (Zhu, Wang, Cai, Lee, Li and Wang, "Rethinking Addressing in
Language Models via Contextualized Equivariant Positional Encoding", ICML 2025, arXiv:2501.00712, §3): RoPE's
position features kept beside the hidden states as a state of their own, updated in every layer by the layer's
attention and by an MLP gated by the content, in a way that commutes with rotations of the features, and used in the
next layer's attention scores.

Position features. Every token t carries, per head h and frequency pair l = 0 .. d_h/2 - 1, a pair
e_{t,h,l} = (c, s) ∈ R², read as the 2x2 block E(e) = [[c, -s], [s, c]] (a rotation scaled by |e|) acting on the pair
(q_{2l}, q_{2l+1}) of the head's query and key. They start as RoPE's (arXiv:2104.09864):

    e⁰_{t,h,l} = (cos p_t·θ_l, sin p_t·θ_l),   θ_l = base^(-2l/d_h),   the same for every head.

Scores in layer n, per head (a sum over the pairs, scaled by 1/√d_h as everywhere):

    q̃_{i,l} = E(eⁿ_{i,l}) q_{i,l},  k̃_{j,l} = E(eⁿ_{j,l}) k_{j,l},
    q̃_i·k̃_j = Σ_l q_{i,l}ᵀ E(eⁿ_{i,l})ᵀ E(eⁿ_{j,l}) k_{j,l},  E(a)ᵀE(b) = [[a·b, -(a×b)], [a×b, a·b]]

with a·b = a_c b_c + a_s b_s and a×b = a_c b_s - a_s b_c. The scores read the features only through a·b and a×b,
so rotating every pair of one frequency l by the same angle changes nothing (SO(2) invariance; a reflection flips
a×b and does change them). At e⁰ the product is R(p_j θ_l - p_i θ_l): RoPE exactly.

Updates after layer n (n < N - 1; the last layer's would feed no score), with a^{n,h} the layer's attention weights
of head h (causal, after softmax) and y_i the layer's feed-forward output for token i (before the residual addition):

    token mixing:       e_{i,h,l} ← e_{i,h,l} + Σ_g W_mixⁿ[h, g] Σ_j a^{n,g}_{ij} e_{j,g,l}
    contextualisation:  e_{i,h,l} ← e_{i,h,l} + Σ_p W_downⁿ[h, p] · silu(W_xⁿ y_i)_p · Σ_g W_upⁿ[p, g] e_{i,g,l}

Both act on the features through real linear maps over tokens and heads whose coefficients (a, silu(W_x y)) do not
depend on them, so they commute with any rotation of the pairs (orthogonal equivariance), and per token with a
permutation of the tokens (permutation equivariance). Together with the invariant scores the whole model is unchanged
when every initial pair of frequency l is rotated by one angle: shifting all positions by s is the rotation by s·θ_l,
so TAPE stays relative (shift-invariant) whatever its parameters.

Parameters, per layer n < N - 1: W_mix (H×H) and W_up (P×H) start at 0, W_x (P×d_model) and W_down (H×P) at
N(0, 0.02²), so the model starts exactly as RoPE and moves away as W_mix and W_up learn; silu as activation;
P = ``mlp_ratio``·H, 4·H by default. All of this as in the authors' released LLaMA implementation
(github.com/VITA-Group/TAPE, ``models/llama/adape.py`` and ``config/adape.json``: ``position_size`` 48 for 12 heads,
``hidden_act`` silu, the zero init of the position MLP's up-projection and of the post-attention linear, the 0.02
init of the rest; the arithmetic code's default is 4·heads too). The model feeds the attended features through the
``state_values`` hook (appended to v, so every attention route computes them with the layer's weights) and the
updates through ``update_state`` (:mod:`pebench.models.state`).

What could not be pinned down, and what differs. The paper's method section could not be read here (only its
abstract, OpenReview reviews and secondary summaries were reachable), so the equations above are written from the
authors' released code, and the section and equation numbers are not checked. The reviews describe a more general
form, each token cut into M segments with a matrix-form position embedding per segment (hyperparameters M, B, L, R;
"RoPE is a special case"); its general block shapes and their O(R) group are not implemented, only the instance the
released code trains (one (cos, sin) pair per head and frequency, i.e. SO(2) blocks). In the released code the
post-attention linear is applied with ``einsum('bqnd,qe->bqnd')``, which reduces the H×H matrix to its row sums (a
scale per head); here it is the full linear map over heads its shape declares. The code's random offset of all
positions in training (``AdaRotaryEmbedding``, k ~ U{0 .. 2·max_len}) is left out: TAPE is shift-invariant, so it
changes nothing but rounding. Not modelled: the paper's fused kernel and its parameter-efficient fine-tuning of a
pre-trained model.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from pebench.encodings.base import EncodingContext, PositionalEncoding
from pebench.encodings.precision import upcast
from pebench.encodings.registry import register
from pebench.encodings.rope import positions_for_heads, rope_inv_freq, rotate_pairs
from pebench.options import Option

INIT_STD = 0.02  # LLaMA's initializer_range in the authors' config


def initial_features(positions: Tensor, inv_freq: Tensor) -> Tensor:
    """RoPE's pairs (cos p·θ_l, sin p·θ_l), interleaved: ``(1, 1, T, d_h)`` for ``(T,)`` positions or
    ``(B, 1, T, d_h)`` for ``(B, T)``, float32."""
    ang = positions_for_heads(positions) * inv_freq.to(positions.device)
    e = torch.stack((torch.cos(ang), torch.sin(ang)), dim=-1).flatten(-2)
    return e[None, None] if e.dim() == 2 else e


def feature_transform(x: Tensor, state: Tensor) -> Tensor:
    """Each pair of ``x`` ``(B, H, T, d_h)`` times its block E(e) = [[c, -s], [s, c]] of ``state`` (pairs (c, s)
    interleaved, ``(B or 1, H, T, d_h)``): the complex product (x_{2l} + i·x_{2l+1})(c + i·s)."""
    return rotate_pairs(x, state[..., 0::2], state[..., 1::2])


@register
class TAPE(PositionalEncoding):
    name = "tape"
    family = "rotary"
    description = ("contextual RoPE: per-head (cos, sin) position features updated in every layer by the attention "
                   "and a content-gated MLP, rotation-equivariant")  # fmt: skip
    paper = "Zhu et al. 2025, arXiv:2501.00712"
    options = {
        "base": Option(10000.0, "RoPE frequency base of the initial features", low=1.0, low_open=True),
        "mlp_ratio": Option(4, "width of the feature MLP per head (P = mlp_ratio·heads; the authors' 4)", type=int,
                            low=1),
    }  # fmt: skip

    def __init__(self, ctx: EncodingContext, **options: Any) -> None:
        super().__init__(ctx, **options)
        if ctx.head_dim % 2:
            raise ValueError(f"{self.name}: head_dim must be even, got {ctx.head_dim}")
        self.register_buffer("_inv_freq", rope_inv_freq(ctx.head_dim, self.opts["base"]), persistent=False)
        n, h, p = max(ctx.n_layers - 1, 0), ctx.n_heads, self.opts["mlp_ratio"] * ctx.n_heads
        self.mix_weight = nn.Parameter(torch.zeros(n, h, h))
        self.up_weight = nn.Parameter(torch.zeros(n, p, h))
        self.gate_weight = nn.Parameter(torch.randn(n, p, ctx.d_model) * INIT_STD)
        self.down_weight = nn.Parameter(torch.randn(n, h, p) * INIT_STD)

    def init_state(self, positions: Tensor, batch_size: int) -> Tensor:
        e = initial_features(positions, self._inv_freq)
        return e.expand(-1, self.ctx.n_heads, -1, -1)

    def transform_qk(self, q: Tensor, k: Tensor, positions: Tensor, layer: int, *, state: Tensor | None = None
                     ) -> tuple[Tensor, Tensor]:  # fmt: skip
        if state is None:  # the transform is the state's alone (the model always passes it)
            return q, k
        return feature_transform(q, state), feature_transform(k, state)

    def state_values(self, state: Tensor, layer: int) -> Tensor | None:
        return state if layer < self.ctx.n_layers - 1 else None  # the last layer's update would feed no score

    def update_state(self, state: Tensor, attended: Tensor | None, ffn_out: Tensor, layer: int) -> Tensor:
        if attended is None:
            return state
        e = state + torch.einsum("gh,bhtc->bgtc", self.mix_weight[layer], upcast(attended))
        gate = F.silu(upcast(ffn_out) @ self.gate_weight[layer].t())  # (B, T, P)
        up = torch.einsum("ph,bhtc->bptc", self.up_weight[layer], e) * gate.transpose(1, 2)[..., None]
        return e + torch.einsum("hp,bptc->bhtc", self.down_weight[layer], up)
