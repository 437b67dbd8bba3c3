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

The bias depends on the content, so it is ``(B, H, T, T)``; it is computed in chunks of queries so the
intermediate tensors stay small at long evaluation lengths. Index positions are not used at all, so shifting them
changes nothing.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from pebench.encodings.base import EncodingContext, PositionalEncoding
from pebench.encodings.registry import register
from pebench.options import Option

CHUNK_ELEMENTS = 1 << 24
"""Rough bound on the elements of one chunk's (B, H, rows, T) intermediates."""


def cope_bias(q: Tensor, k: Tensor, table: Tensor, scale: float) -> Tensor:
    """The CoPE bias for queries ``q`` and keys ``k`` ``(B, H, T, d)`` and a table ``(d, npos)``: ``(B, H, T, T)``."""
    b, h, t, _ = q.shape
    npos = table.shape[-1]
    qf, kf = q.float(), k.float()
    logits_int = qf @ table.float()  # (B, H, T, npos): z_i[p]
    chunks = []  # out of place, so it also runs under vmap (packed seeds)
    rows = max(1, CHUNK_ELEMENTS // max(1, b * h * t))
    for start in range(0, t, rows):
        stop = min(t, start + rows)
        gates = torch.sigmoid((qf[:, :, start:stop] @ kf.transpose(-1, -2)) * scale)
        future = torch.arange(t, device=q.device)[None, :] > torch.arange(start, stop, device=q.device)[:, None]
        gates = gates.masked_fill(future, 0.0)
        pos = gates.flip(-1).cumsum(-1).flip(-1).clamp(max=npos - 1)
        floor = pos.floor()
        w = pos - floor
        lo = floor.long()
        hi = pos.ceil().long()
        z = logits_int[:, :, start:stop]
        chunks.append(z.gather(-1, hi) * w + z.gather(-1, lo) * (1 - w))
    return chunks[0] if len(chunks) == 1 else torch.cat(chunks, dim=2)


@register
class CoPE(PositionalEncoding):
    name = "cope"
    position_indexed = False
    description = "contextual positions: reverse cumulative sums of σ(q·k) gates, interpolated learned embeddings"
    paper = "Golovneva et al. 2024, arXiv:2405.18719"
    options = {"npos": Option(64, "rows of the position table (positions are clamped to npos - 1)", type=int, low=2)}

    def __init__(self, ctx: EncodingContext, **options: object) -> None:
        super().__init__(ctx, **options)
        self.table = nn.Parameter(torch.zeros(ctx.n_layers, ctx.head_dim, self.opts["npos"]))

    def attn_bias(self, q: Tensor, k: Tensor, positions: Tensor, layer: int) -> Tensor:
        return cope_bias(q, k, self.table[layer], self.attn_scale)
