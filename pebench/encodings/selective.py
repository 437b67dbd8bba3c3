"""Selective attention (Leviathan, Kalman and Matias, "Selective Attention Improves Transformer", ICLR 2025,
arXiv:2410.02703, §3 and its Figure 2, the sketch implementation): parameter-free; a token can mark earlier tokens as
no longer needed, and every later token then attends less to them.

In each layer, with z the scaled, causally masked logits of the layer's first head (head 0; q_k·k_j/sqrt(d_h)):

    selection  S_kj = ReLU(z_kj)    for 0 < j < k     (0 otherwise: no negative selection, the first token
                                                       (<BOS>) is never masked, no token masks itself, causal),
    mask       F_ij = Σ_{k<i} S_kj = Σ_{j<k<i} ReLU(z_kj)   (accumulated; a token's selections act strictly after it),

and F is subtracted from the logits of every head of the layer, the selecting head included, before the softmax:
o_i = Σ_{j<=i} softmax_j(q_i·k_j/sqrt(d_h) - F_ij) v_j. F ≥ 0, F_i0 = F_ii = 0, and the first three rows are never
changed (F_ij needs j >= 1 and a k with j < k < i).

Recipe as in Figure 2: the selection logits are head 0's (``attn_logits[:, 0]``), ReLU (not softplus) keeps only
positive selection, column 0 is zeroed ("do not mask <BOS>"), the diagonal is zeroed ("do not mask self"), S is
shifted down one query row ("mask strictly in the future", so F_ij sums k < i, not k <= i), then a cumulative sum
over the queries. No stop-gradient appears in the sketch, so the selection logits are not detached: head 0's q and k
also learn through F. pebench has no <BOS> token: the first token of a sequence, whatever it is, plays that role.
What could not be checked against the paper's own text here: the figure's lines were read from a public
reproduction (andrew-healey/context-compression, whose comments name each step) and our memory of the paper, which
agree; the paper's context pruning (evicting masked tokens from the KV cache at inference) is not modelled, and the
paper used selective attention inside a model with its own position encoding, whereas here it is the only one (as
FoX is), on top of NoPE's causal attention. Parameter-free, so no options and no initialisation.

The bias -F depends on the content of earlier query rows (F_ij sums rows k < i of head 0's logits), so a block of
query rows cannot be computed from its own scores: it plugs in through
:meth:`~pebench.encodings.base.PositionalEncoding.attn_bias` from q and k (as CoPE's), ``(B, 1, T, T)`` shared by the
heads. Index positions are not used, so shifting them changes nothing.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from pebench.encodings.base import PositionalEncoding
from pebench.encodings.registry import register


def selection_mask(logits: Tensor) -> Tensor:
    """F ``(..., T, T)`` from the selecting head's scaled logits ``(..., T, T)`` (query rows, key columns):
    F_ij = Σ_{j<k<i} ReLU(logits_kj) for j >= 1, and 0 in column 0 (entries of keys after a query are 0)."""
    t = logits.shape[-1]
    allowed = torch.ones(t, t, dtype=torch.bool, device=logits.device).tril(-1)  # k > j: causal, not self
    allowed[:, 0] = False  # the first token is never masked
    selected = torch.where(allowed, logits.float().relu(), 0.0)  # S_kj
    return F.pad(selected.cumsum(-2)[..., :-1, :], (0, 0, 1, 0))  # row i: Σ_{k<=i-1} S_kj


@register
class SelectiveAttention(PositionalEncoding):
    name = "selective"
    family = "content"
    position_indexed = False
    description = "selective attention: logits minus F_ij = Σ_{j<k<i} ReLU(head-0 logit_kj), parameter-free"
    paper = "Leviathan et al. 2025, arXiv:2410.02703"

    def attn_bias(self, q: Tensor, k: Tensor, positions: Tensor, layer: int) -> Tensor:
        logits = (q[:, 0].float() @ k[:, 0].float().transpose(-1, -2)) * self.attn_scale  # (B, T, T), head 0
        return -selection_mask(logits).unsqueeze(1)  # (B, 1, T, T): the same F for every head
