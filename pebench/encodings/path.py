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

Computation: exact, in plain PyTorch, by chunks of C tokens with the compact "UT" form of a product of
Householder-like matrices (the paper's parallel algorithm, done by matrix products; its Triton kernels are not used).
For the C tokens a..a+C-1 of a chunk, W ``(C, d)`` its w_t as rows and D = diag(β),

    H_a H_{a+1} ⋯ H_{a+C-1} = I - Wᵀ A W,    A = (I + D striu(W Wᵀ))⁻¹ D      (upper triangular),

striu the strictly upper part: the UT transform (Joffrain et al. 2006; A⁻¹ = D⁻¹ + striu(W Wᵀ) for β > 0; the
recurrence A_n = [[A_{n-1}, -β_n A_{n-1} W_{n-1} w_n], [0, β_n]] gives it for every β, 0 included). A product over
any run of consecutive tokens of the chunk is the same with A's diagonal block of that run, so with Q, K the chunk's
queries and keys, tril / stril the lower / strictly lower parts, and G = Q Wᵀ, E = stril(W Kᵀ):

    scores within the chunk      S = Q Kᵀ - tril(G) Aᵀ E,
    queries to the chunk's start Q̃ = Q - tril(G) Aᵀ W        (row i: H_a ⋯ H_i q_i),
    keys to the chunk's end      K̃ = K - Eᵀ A W               (row j: H_{a+C-1} ⋯ H_{j+1} k_j),
    the chunk's product          Pᵀ = I - Wᵀ Aᵀ W,

the A-products through the inverse of the unit triangular I + D striu(W Wᵀ) (one triangular solve). Then, as
before, the queries of the later chunks are carried back chunk by chunk (Q̃ Pᵀ) and scored against each earlier
chunk's K̃: s_ij = q̃_iᵀ P_{b-1}ᵀ ⋯ P_{b'+1}ᵀ k̃_j for i in chunk b and j in chunk b' < b. Everything is a batched
matrix product or triangular solve over (batch, head, chunk), with n - 1 sequential steps between the chunks, where
the former per-token form (blocks of √T tokens, one matrix-vector step per token, kept as the tests' sequential
reference) took about 2√T sequential steps of small ones.

Operation count per head (multiply-adds counted as 2, n = T/C chunks; the solves C² per right-hand column): within
the chunks n(3C³ + 14C²d + 2Cd²), between them C²d·n(n-1) + Cd²(n-1)(n-2); the per-token form's 6T(c+d)d (two
matrix-vector products and a rank-one update on c + d rows per token) plus (c²d + cd²)·m(m-1), c ≈ √T, m = T/c;
q·kᵀ alone is 2T²d. At d = 32: T = 64, 0.84M here (C = 16) against 1.06M; T = 256, 8.2M (C = 32) against 8.3M;
q·kᵀ 0.26M and 4.2M. So about as many FLOPs, in a third of the operations (forward and backward).
The chunk (:func:`block_size`): the cubic term within the chunks grows with C and the carrying between them, T²d²/C,
falls; at d = 32 their sum is least near C ≈ 1.2-1.6√T (T from 64 to 1024). We take chunks of at most the power of
two at least √(2T) (16 up to 128 tokens, 32 up to 512, 64 up to 2048; one chunk up to 16 tokens), the larger side,
which halves the sequential steps between chunks, and split T into that many chunks as equally as possible, so a
length past a power of two pads no almost-empty chunk: within 20% of the least FLOPs from 17 to 1024 tokens.

The chunk's triangular system I + D striu(W Wᵀ) is inverted once (one triangular solve against the identity) and
applied by matrix products: batched LAPACK solves of small systems cost more per right-hand column than the products.

The attention runs through PaTH's own kernel (:func:`path_attention`, ``kernel = "path"``): the scores by chunks of
query rows (:func:`path_score_rows`), each chunk scaled, causally masked, softmax and times the values, so no
``(B, H, T, T)`` tensor is built on any device; asked for its weights (the inspected maps), it returns each chunk's
softmax as well. :meth:`PaTH.scores` gives the whole scores, for the model's blocked attention
(:func:`pebench.models.kernels.blocked`), which the kernel takes when a wrapper adds a bias to PaTH's scores, and for
the tests. Index positions are not read, so shifting them changes nothing.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from pebench.encodings.base import EncodingContext, PositionalEncoding
from pebench.encodings.precision import upcast
from pebench.encodings.registry import register
from pebench.models.attention import causal_additive, join_rows
from pebench.models.kernels import AttentionCall, KernelResult, blocked, register_kernel
from pebench.options import Option


def block_size(length: int) -> int:
    """Tokens per chunk of :func:`path_scores`: as few chunks as the power of two at least √(2T) (and at least 16)
    allows, as equal as can be (fewer than one padded token per chunk); the module docstring says why."""
    most = max(16, 1 << -(-(2 * length - 1).bit_length() // 2))
    chunks = max(1, -(-length // most))
    return max(1, -(-length // chunks))


def _chunks(q: Tensor, k: Tensor, w: Tensor, beta: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Per chunk, for queries, keys and directions ``(..., n, C, d)`` and β ``(..., n, C, 1)``: the scores within
    it S, its queries carried to its start Q̃, its keys carried to its end K̃ and its product transposed Pᵀ (the
    module docstring's formulas)."""
    c, d = q.shape[-2:]
    gram = torch.cat([q, w], -2) @ torch.cat([w, k], -2).mT  # [[Q Wᵀ, Q Kᵀ], [W Wᵀ, W Kᵀ]]
    # split, not sliced: one backward that joins the parts, not a zero-filled gram-sized gradient per slice
    (qw, qk), (ww, e) = (half.split(c, -1) for half in gram.split(c, -2))
    e = e.tril(-1)
    # I + D striu(W Wᵀ), unit upper triangular; the solves in float32 at least (none in bfloat16 under autocast)
    eye = torch.eye(c, dtype=q.dtype, device=q.device)
    m = upcast(eye + beta * ww.triu(1))
    # its inverse by one triangular solve (c right-hand columns; batched LAPACK solves of small matrices cost more
    # per column than the products that then apply it: docs/speed.md, "PaTH")
    inv = torch.linalg.solve_triangular(m, upcast(eye).expand_as(m), upper=True, unitriangular=True)
    at = beta * (inv.mT @ upcast(torch.cat([e, w], -1)))  # Aᵀ [E | W]
    z_e, z_w = (qw.tril() @ at).split([c, d], -1)
    aw = inv @ (beta * w)  # A W
    product_t = torch.eye(d, dtype=q.dtype, device=q.device) - w.mT @ at.split([c, d], -1)[1]
    return qk - z_e, q - z_w, k - e.mT @ aw, product_t


def _scores_by_chunk(q: Tensor, k: Tensor, w: Tensor, beta: Tensor, block: int | None
                     ) -> tuple[int, list[Tensor], list[Tensor | None]]:  # fmt: skip
    """The chunk size ``c`` and the scores of :func:`path_scores` by chunk: per chunk b its scores within it
    ``(..., c, c)`` and the strip of the later chunks' queries against its keys ``(..., (n - 1 - b) c, c)`` (None for
    the last chunk), on the padded length n·c."""
    t = q.shape[-2]
    c = block or block_size(t)
    nb = -(-t // c)
    pad = nb * c - t  # padded tokens come last, with w = 0 and β = 0 (H = I): no real score reads them
    q, k, w = (F.pad(upcast(a), (0, 0, 0, pad)).unflatten(-2, (nb, c)) for a in (q, k, w))
    beta = F.pad(upcast(beta), (0, pad)).unflatten(-1, (nb, c))[..., None]
    # per chunk by unbind, not by index: one backward that stacks the chunks, not a zero-filled gradient each
    inside, back, keys, product_t = (x.unbind(-3) for x in _chunks(q, k, w, beta))
    strips: list[Tensor | None] = [None] * nb
    carried = back[nb - 1]  # the queries of chunks b.., carried back to the start of chunk b
    for b in range(nb - 1, 0, -1):
        strips[b - 1] = carried @ keys[b - 1].mT
        if b > 1:
            carried = torch.cat([back[b - 1], carried @ product_t[b - 1]], -2)
    return c, list(inside), strips


def path_scores(q: Tensor, k: Tensor, w: Tensor, beta: Tensor, block: int | None = None) -> Tensor:
    """``s_ij = q_iᵀ H_i ⋯ H_{j+1} k_j`` with ``H_t = I - β_t w_t w_tᵀ`` for queries, keys and directions ``(..., T,
    d)`` and ``β`` ``(..., T)``: ``(..., T, T)`` in float32 (float64 kept; under autocast, its matrix products'
    dtype); entries j > i hold finite values of no meaning. By chunks of ``block`` tokens (default
    :func:`block_size`)."""
    t = q.shape[-2]
    c, inside, strips = _scores_by_chunk(q, k, w, beta, block)
    columns = []
    for b, (ins, strip) in enumerate(zip(inside, strips, strict=True)):
        col = ins if strip is None else torch.cat([ins, strip], -2)
        columns.append(F.pad(col, (0, 0, b * c, 0)))  # rows before the chunk: keys after their query, masked
    return torch.cat(columns, -1)[..., :t, :t]


def path_score_rows(q: Tensor, k: Tensor, w: Tensor, beta: Tensor, block: int | None = None) -> list[Tensor]:
    """The scores of :func:`path_scores` by chunks of query rows, for an attention that never builds the whole
    ``(..., T, T)``: chunk b's queries (rows b·c .. b·c + c - 1) against the keys up to the end of their chunk,
    ``(..., c, (b + 1) c)``, cut to the T real rows and keys (the same values as those entries of
    :func:`path_scores`)."""
    t = q.shape[-2]
    c, inside, strips = _scores_by_chunk(q, k, w, beta, block)
    pieces = [() if s is None else s.split(c, -2) for s in strips]  # strip j: the rows of chunks j + 1, j + 2, ..
    rows = []
    for b, ins in enumerate(inside):
        parts = [pieces[j][b - j - 1] for j in range(b)] + [ins]
        row = parts[0] if len(parts) == 1 else torch.cat(parts, -1)
        rows.append(row[..., : t - b * c, :t] if (b + 1) * c > t else row)
    return rows


@register_kernel("path")
def path_attention(call: AttentionCall) -> KernelResult:
    """PaTH's attention by chunks of query rows: each chunk's scores (:func:`path_score_rows`) scaled, causally masked,
    softmax, times the values, so neither the ``(B, H, T, T)`` scores nor a gradient of their size is built; on request
    (:attr:`~pebench.models.kernels.AttentionCall.want_weights`) also each chunk's softmax, zero past its keys, as the
    ``(B, H, T, T)`` weights. With a bias (a wrapper adding one to PaTH's scores) the model's blocked attention on
    the whole scores (:meth:`PaTH.scores`, :func:`pebench.models.kernels.blocked`)."""
    path = call.encoding(PaTH)  # the call's encoding, or the one it wraps
    if call.mask() is not None:
        return blocked(call, raw=path.scores(call.q, call.k, call.x, call.layer))
    q, k, v, t = call.q, call.k, call.v, call.q.shape[-2]
    w, beta = path.transforms(call.x, call.layer)
    causal = causal_additive(t, q.device, torch.float32)
    outs, kept, start = [], [], 0
    for scores in path_score_rows(q, k, w, beta):
        stop = start + scores.shape[-2]
        probs = (scores.float() * call.scale + causal[..., start:stop, : scores.shape[-1]]).softmax(-1).to(v.dtype)
        if call.want_weights:
            kept.append(F.pad(probs, (0, t - scores.shape[-1])))
        if call.dropout:
            probs = F.dropout(probs, call.dropout)
        outs.append(probs @ v[..., : scores.shape[-1], :])
        start = stop
    return join_rows(outs), join_rows(kept) if call.want_weights else None


@register
class PaTH(PositionalEncoding):
    name = "path"
    family = "content"
    position_indexed = False
    kernel = "path"
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

    def scores(self, q: Tensor, k: Tensor, x: Tensor, layer: int) -> Tensor:
        """The unscaled scores ``(B, H, T, T)`` of queries ``q`` against keys ``k`` ``(B, H, T, qk_dim)`` in layer
        ``layer`` from the hidden states ``x`` ``(B, T, d_model)`` entering its attention (:func:`path_scores`; entries
        of keys after a query hold finite values of no meaning)."""
        w, beta = self.transforms(x, layer)
        return path_scores(q, k, w, beta)
