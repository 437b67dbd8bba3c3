"""CoPE, contextual position encoding (Golovneva et al., "Contextual Position Encoding: Learning to Count What's
Important", 2024, arXiv:2405.18719, §3).

Positions are counted by the content instead of indexed: a query decides which earlier tokens to count.

    gates        g_ij = σ(q_i·k_j / sqrt(d_h))      for j <= i (0 for the future),
    position     p_ij = Σ_{t=j..i} g_it             (a reverse cumulative sum of the row's gates),
    embedding    e[p] = (p - ⌊p⌋)·e[⌈p⌉] + (1 - p + ⌊p⌋)·e[⌊p⌋]    (linear interpolation of a learned table),
    bias         b_ij = q_i·e[p_ij],

added to the scaled score q_i·k_j / sqrt(d_h). The table e has ``npos`` rows (positions are clamped to npos - 1)
of width head_dim, one per layer shared by the heads, initialised to zero (so training starts as NoPE). As the
authors do, the interpolation is computed from the integer logits z_i[p] = q_i·e[p] (one small matmul) gathered at
⌊p⌋ and ⌈p⌉, never from interpolated vectors.

The bias depends on the content, so it is ``(B, H, T, T)``; it is computed in chunks of queries so the intermediate
tensors stay small at long evaluation lengths. Each query row's bias depends only on that row's scores, so the encoding
also gives it by rows (``attn_bias`` with ``rows=``, hence ``bias_by_rows``): in the model's blocked attention (CPU,
packed seeds) the bias is computed block by block from the scores the attention computes anyway, and the full bias is
never built (issue 17: 0.17x of HF Llama's step throughput at seq 256 with the full bias). Index positions are not used
at all, so shifting them changes nothing.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from pebench.encodings.base import EncodingContext, PositionalEncoding, RowBlock
from pebench.encodings.registry import register
from pebench.options import Option

CHUNK_ELEMENTS = 1 << 24
"""Rough bound on the elements of one chunk's (B, H, rows, T) intermediates."""


def cope_rows(scores: Tensor, q: Tensor, table: Tensor, start: int) -> Tensor:
    """The CoPE bias of query rows ``start .. start + R - 1`` against keys ``0 .. S - 1`` from the rows' scaled
    scores ``(B, H, R, S)``, their queries ``(B, H, R, d)`` and a table ``(d, npos)``: ``(B, H, R, S)``.

    With ``C`` the inclusive cumulative sum of a row's gates over the keys, ``p_ij = C_ii - C_ij + g_ij`` for
    ``j <= i`` (no flipped copies, no masking: entries of future keys ``j > i`` hold finite values the model masks
    out, and their gradient is zero). Interpolation as ``z[⌊p⌋] + (p - ⌊p⌋)·(z[⌊p⌋+1] - z[⌊p⌋])``, the same value as
    the paper's two-sided form (its derivative differs only at exactly integer ``p``)."""
    r = scores.shape[-2]
    npos = table.shape[-1]
    z = q.float() @ table.float()  # (B, H, R, npos): z_i[p] = q_i·e[p]
    step = torch.nn.functional.pad(z[..., 1:] - z[..., :-1], (0, 1))  # z[p+1] - z[p]; 0 past the last row
    gates = torch.sigmoid(scores.float())
    cum = gates.cumsum(-1)  # C_ij
    diagonal = torch.arange(start, start + r, device=scores.device).view(r, 1).expand(*cum.shape[:-1], 1)
    gates_sum = cum.gather(-1, diagonal)  # C_ii
    pos = (gates_sum - cum + gates).clamp(0.0, npos - 1)
    floor = pos.floor()
    lo = floor.long()
    return z.gather(-1, lo) + (pos - floor) * step.gather(-1, lo)


def cope_bias(q: Tensor, k: Tensor, table: Tensor, scale: float) -> Tensor:
    """The CoPE bias for queries ``q`` and keys ``k`` ``(B, H, T, d)`` and a table ``(d, npos)``: ``(B, H, T, T)``,
    computed in chunks of query rows (:func:`cope_rows`)."""
    b, h, t, _ = q.shape
    qf, kf = q.float(), k.float()
    chunks = []  # out of place, so it also runs under vmap (packed seeds)
    rows = max(1, CHUNK_ELEMENTS // max(1, b * h * t))
    for start in range(0, t, rows):
        stop = min(t, start + rows)
        scores = (qf[:, :, start:stop] @ kf.transpose(-1, -2)) * scale
        chunks.append(cope_rows(scores, qf[:, :, start:stop], table, start))
    return chunks[0] if len(chunks) == 1 else torch.cat(chunks, dim=2)


@register
class CoPE(PositionalEncoding):
    name = "cope"
    family = "content"
    position_indexed = False
    description = "contextual positions: reverse cumulative sums of σ(q·k) gates, interpolated learned embeddings"
    paper = "Golovneva et al. 2024, arXiv:2405.18719"
    options = {"npos": Option(64, "rows of the position table (positions are clamped to npos - 1)", type=int, low=2)}

    def __init__(self, ctx: EncodingContext, **options: object) -> None:
        super().__init__(ctx, **options)
        self.table = nn.Parameter(torch.zeros(ctx.n_layers, ctx.head_dim, self.opts["npos"]))

    def attn_bias(self, q: Tensor, k: Tensor, positions: Tensor, layer: int, *, rows: RowBlock | None = None
                  ) -> Tensor:  # fmt: skip
        if rows is not None:  # the block's rows from the scores the blocked attention computed anyway
            return cope_rows(rows.scores, q, self.table[layer], rows.start)
        return cope_bias(q, k, self.table[layer], self.attn_scale)
