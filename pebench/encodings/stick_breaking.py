"""Stick-breaking attention (Tan et al., "Scaling Stick-Breaking Attention: An Efficient Implementation and In-depth
Study", ICLR 2025, arXiv:2410.17980, §2-3): softmax replaced by a stick-breaking process over the earlier tokens,
and no positional encoding at all (order comes from the process itself).

For query i and an earlier key j < i, with the scaled score z_ij = q_i·k_j / sqrt(d_h),

    break point  β_ij = σ(z_ij),
    weight       A_ij = β_ij · Π_{j<k<i} (1 - β_ik),

so the most recent key takes its share β of the stick first, the next one a share of what is left, and so on
backwards. In log space, as the paper computes it for stability (log σ and log(1 - σ(z)) = -softplus(z) never
underflow the way a product of many σ does):

    log A_ij = log σ(z_ij) - Σ_{k=j+1}^{i-1} softplus(z_ik),

a reverse cumulative sum of softplus over the row's keys (here a flipped cumsum shifted by one key, so no
difference of large sums loses precision).

The keys are strictly earlier (j < i): the authors' reference (``stickbreaking_attention/sb_ref.py`` and its tests,
``attend_current=False`` by default) masks the diagonal. The weights of a row sum to at most 1 and are not
renormalised; the released code gives the leftover 1 - Σ_j A_ij to the current token's own value,
o_i = Σ_{j<i} A_ij v_j + (1 - Σ_{j<i} A_ij) v_i (their reference and kernel tests compare against
``o + rem[..., None] * v``), which is the default here (``remainder="self"``: the leftover becomes the diagonal's
weight, so the first token attends to itself). ``remainder="drop"`` leaves it out (o_i = Σ_{j<i} A_ij v_j; the
first token's output is 0).

The encoding plugs in through :meth:`~pebench.encodings.base.PositionalEncoding.attention_weights`
(``custom_attention_weights``); every row's weights depend only on that row's scores, so the model computes them by
blocks of query rows. Index positions are not used, so shifting them changes nothing.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from pebench.encodings.base import PositionalEncoding
from pebench.encodings.registry import register
from pebench.options import Option


def stick_breaking_weights(scores: Tensor, start: int, remainder: str = "self") -> Tensor:
    """Stick-breaking weights of query rows ``start .. start + R - 1`` against keys ``0 .. S - 1`` from their scaled
    scores ``(..., R, S)`` (entries of keys j >= i are ignored, whatever they hold): ``(..., R, S)`` in float32."""
    r, s = scores.shape[-2:]
    query = torch.arange(start, start + r, device=scores.device).view(r, 1)
    key = torch.arange(s, device=scores.device).view(1, s)
    earlier = key < query  # (R, S): j < i
    z = scores.float().masked_fill(~earlier, 0.0)  # no -inf anywhere: finite values, zero gradient where masked
    broken = F.softplus(z).masked_fill(~earlier, 0.0)  # -log(1 - β_ik)
    after = broken.flip(-1).cumsum(-1).flip(-1)  # Σ_{k>=j} over the earlier keys
    after = F.pad(after[..., 1:], (0, 1))  # Σ_{j<k<i}: the keys after j (the keys at or past i add 0)
    weights = (F.logsigmoid(z) - after).exp().masked_fill(~earlier, 0.0)
    if remainder == "self":
        leftover = (1.0 - weights.sum(-1, keepdim=True)).clamp_min(0.0)  # >= 0 but for float rounding
        weights = weights + leftover * (key == query)
    return weights


@register
class StickBreaking(PositionalEncoding):
    name = "stick_breaking"
    family = "content"
    position_indexed = False
    custom_attention_weights = True
    description = "stick-breaking attention: A_ij = σ(z_ij)·Π_{j<k<i}(1 - σ(z_ik)) instead of softmax, no positions"
    paper = "Tan et al. 2024, arXiv:2410.17980"
    options = {
        "remainder": Option("self", "where the mass left after the earlier keys goes: 'self' (the current token's "
                            "value, as the authors' code) or 'drop' (nowhere)", type=str, choices=("self", "drop")),
    }

    def attention_weights(self, scores: Tensor, start: int) -> Tensor:
        return stick_breaking_weights(scores, start, self.opts["remainder"])
