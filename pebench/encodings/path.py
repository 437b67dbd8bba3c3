"""PaTH attention (Yang, Shen, Wen, Tan, Mishra, Ren, Panda & Kim, "PaTH Attention: Position Encoding via
Accumulating Householder Transformations", NeurIPS 2025, arXiv:2505.16381, §2): no position vector and no rotation;
the score of key j at query i goes through the product of one data-dependent Householder-like transform per token
between them,

    H_t  = I - β_t w_t w_tᵀ,
    s_ij = q_iᵀ H_i H_{i-1} ⋯ H_{j+1} k_j      (j <= i; the identity for j = i),
    o_i  = Σ_{j<=i} softmax_j(s_ij / sqrt(d_h)) v_j.

The paper writes the logit as k_jᵀ (Π_{s=j+1}^{i} H_s) q_i, the same number since every H_t is symmetric; it is also
the order in which the released decoder updates its cached keys (k_j <- H_t k_j as token t arrives). With β_t = 0
every H_t is the identity and PaTH is attention without positions (tested).

Parametrisation, per layer and head, from the token's hidden state x_t entering the attention (after its norm): w_t
is a low-rank projection of x_t (d_model -> ``rank`` -> heads·d_h, no biases), passed through a causal depthwise
convolution over the tokens of width ``conv`` with SiLU, then L2-normalised per head; β_t = 2σ(u_h·x_t + c_h) ∈
(0, 2), so the eigenvalue 1 - β_t along w_t lies in (-1, 1) (negative eigenvalues allowed; β = 2 is a reflection).
The rank 32, the width 3, the SiLU and β = 2σ are those of the authors' released layer (flash-linear-attention,
``fla/layers/path_attn.py``, read to pin these constants down; none of its code is used); the paper's text names
the short convolution and the L2 normalisation of w but we could not re-check its section numbers. Initialisation
(ours): projections N(0, 0.02²) as the model's, the convolution U(-1/√width, 1/√width) (PyTorch's default for a
depthwise convolution), c_h = 0 (β starts near 1); L2 normalisation with eps 1e-6. The paper's PaTH-FoX variant
(adding FoX's forget gate) and the layer's optional QK-norm are not part of this encoding.

Computation: the Triton kernels of the paper (a blockwise UT-transform algorithm) are not used. Here the scores are
exact products in plain PyTorch, O(T²·d) per head, by blocks of c ≈ √T tokens: one backward pass over each block
carries the block's queries back to its start (H_a ⋯ H_i q_i), gives the scores inside the block, each key carried
to the block's end (H_{e-1} ⋯ H_{j+1} k_j) and the block's d×d product; then the queries are carried back block by
block with those products and scored against each earlier block's carried keys. About 2√T sequential steps instead
of T. The scores come through :meth:`~pebench.encodings.base.PositionalEncoding.attention_scores`
(``custom_scores``), a ``(B, H, T, T)`` tensor the model scales, masks and feeds to its blocked attention on every
device. Index positions are not read, so shifting them changes nothing.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from pebench.encodings.base import EncodingContext, PositionalEncoding
from pebench.encodings.precision import upcast
from pebench.encodings.registry import register
from pebench.options import Option


def block_size(length: int) -> int:
    """Tokens per block of :func:`path_scores`: about √T (balances the two sequential passes)."""
    return max(1, min(length, max(4, math.isqrt(max(length - 1, 0)) + 1)))


def path_scores(q: Tensor, k: Tensor, w: Tensor, beta: Tensor, block: int | None = None) -> Tensor:
    """``s_ij = q_iᵀ H_i ⋯ H_{j+1} k_j`` with ``H_t = I - β_t w_t w_tᵀ`` for queries, keys and directions ``(..., T,
    d)`` and ``β`` ``(..., T)``: ``(..., T, T)`` in float32; entries j > i hold finite values of no meaning."""
    t, d = q.shape[-2:]
    c = block or block_size(t)
    nb = -(-t // c)
    pad = nb * c - t  # padded tokens come last, with w = 0 (H = I): no real score reads them
    q, k, w = (F.pad(upcast(a), (0, 0, 0, pad)) for a in (q, k, w))
    bw = F.pad(upcast(beta), (0, pad))[..., None] * w  # β_t w_t
    qb, kb, wb, bwb = (a.unflatten(-2, (nb, c)) for a in (q, k, w, bw))  # (..., nb, c, d)
    # rows 0..c-1: the block's queries; rows c..c+d-1: the identity, which becomes the block's product transposed
    state = torch.cat([qb, torch.eye(d, device=q.device).expand(*qb.shape[:-2], d, d)], -2)
    row = torch.arange(c + d, device=q.device)[:, None]
    outs = []
    for s in reversed(range(c)):  # token a + s of every block
        outs.append(state @ kb[..., s, :, None])  # queries i >= s carried to s (H_{a+s+1} ⋯ H_i q_i) · k_s; N k_s
        active = ((row >= s) | (row >= c)).to(state.dtype)  # H_{a+s} acts on queries i >= s and on the product
        state = state - (state @ wb[..., s, :, None]) * active * bwb[..., s, None, :]
    out = torch.cat(outs[::-1], -1)  # (..., nb, c + d, c)
    inside, keys = out[..., :c, :], out[..., c:, :]  # scores within a block; keys carried to its end, as columns
    back, product = state[..., :c, :], state[..., c:, :]  # queries carried to their block's start; (H_a ⋯ H_e-1)ᵀ
    strips: list[Tensor | None] = [None] * nb
    carried = back[..., nb - 1, :, :]  # the queries of blocks b.., carried back to the start of block b
    for b in range(nb - 1, 0, -1):
        strips[b - 1] = carried @ keys[..., b - 1, :, :]
        carried = torch.cat([back[..., b - 1, :, :], carried @ product[..., b - 1, :, :]], -2)
    columns = []
    for b in range(nb):
        col = inside[..., b, :, :] if strips[b] is None else torch.cat([inside[..., b, :, :], strips[b]], -2)
        columns.append(F.pad(col, (0, 0, b * c, 0)))  # rows before the block: keys after their query, masked
    return torch.cat(columns, -1)[..., :t, :t]


@register
class PaTH(PositionalEncoding):
    name = "path"
    family = "content"
    position_indexed = False
    custom_scores = True
    description = ("PaTH attention: scores q_iᵀ H_i⋯H_{j+1} k_j through data-dependent Householder-like "
                   "H_t = I - β_t w_t w_tᵀ, no positions")  # fmt: skip
    paper = "Yang et al. 2025, arXiv:2505.16381"
    options = {
        "rank": Option(32, "rank of the projection x_t -> w_t (32: the authors' layer)", int, low=1),
        "conv": Option(3, "width of the causal short convolution (with SiLU) on w_t over the tokens; 0: none",
                       int, low=0, high=16),
    }  # fmt: skip

    def __init__(self, ctx: EncodingContext, **options: object) -> None:
        super().__init__(ctx, **options)
        layers, heads, width, rank = ctx.n_layers, ctx.n_heads, ctx.n_heads * ctx.head_dim, self.opts["rank"]
        self.w_down = nn.Parameter(torch.randn(layers, rank, ctx.d_model) * 0.02)
        self.w_up = nn.Parameter(torch.randn(layers, width, rank) * 0.02)
        if self.opts["conv"]:
            bound = self.opts["conv"] ** -0.5
            self.w_conv = nn.Parameter(torch.empty(layers, width, self.opts["conv"]).uniform_(-bound, bound))
        self.beta_weight = nn.Parameter(torch.randn(layers, heads, ctx.d_model) * 0.02)
        self.beta_bias = nn.Parameter(torch.zeros(layers, heads))

    def transforms(self, x: Tensor, layer: int) -> tuple[Tensor, Tensor]:
        """The unit directions w ``(B, H, T, d_h)`` and the β ``(B, H, T)`` of the hidden states ``x``
        ``(B, T, d_model)`` entering layer ``layer``."""
        xf = upcast(x)
        z = xf @ upcast(self.w_down[layer]).t() @ upcast(self.w_up[layer]).t()  # (B, T, H·d_h)
        width = self.opts["conv"]
        if width:  # causal depthwise convolution over the tokens: token t reads t - width + 1 .. t
            kernel = upcast(self.w_conv[layer])[:, None, :]
            z = F.conv1d(F.pad(z.transpose(-1, -2), (width - 1, 0)), kernel, groups=kernel.shape[0])
            z = F.silu(z).transpose(-1, -2)
        w = F.normalize(z.unflatten(-1, (self.ctx.n_heads, -1)).transpose(-2, -3), dim=-1, eps=1e-6)
        beta = 2 * torch.sigmoid(xf @ upcast(self.beta_weight[layer]).t() + upcast(self.beta_bias[layer]))
        return w, beta.transpose(-1, -2)

    def attention_scores(self, q: Tensor, k: Tensor, x: Tensor, positions: Tensor, layer: int) -> Tensor:
        w, beta = self.transforms(x, layer)
        return path_scores(q, k, w, beta)
