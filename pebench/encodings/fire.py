"""FIRE, functional interpolation for relative positions (Li et al., "Functional Interpolation for Relative
Positions Improves Long Context Transformers", ICLR 2024, arXiv:2310.04418, §3).

A learned function of the normalised distance is added to the score of query i on key j (j <= i):

    b(i, j) = f_θ( ψ(i - j) / ψ(max(L, i)) ),     ψ(x) = log(c·x + 1),

with f_θ a learned MLP from the scalar input to one value per head, c > 0 learned (used as |c|) and L a learned
threshold (clamped to >= 1). The division by ψ(max(L, i)) maps
every distance into [0, 1], so longer sequences are interpolated rather than extrapolated; the threshold keeps
short sequences from being over-stretched. Because the normaliser depends on the query's absolute position i once
i > L, FIRE is not shift-invariant beyond the threshold (it is for positions all below L).

Our choices where the formula leaves them open: the MLP has one hidden layer of ``hidden`` (32) ReLU units; one MLP,
c and L are shared by all layers; c starts at 1 and L at the ``threshold`` option (default 64, the training length
of the built-in tasks).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from pebench.encodings.base import EncodingContext, PositionalEncoding, expand_positions
from pebench.encodings.registry import register
from pebench.options import Option


@register
class FIRE(PositionalEncoding):
    name = "fire"
    family = "bias"
    description = "learned MLP of the log-normalised distance ψ(i-j)/ψ(max(L,i)), one value per head"
    paper = "Li et al. 2024, arXiv:2310.04418"
    bias_shared_by_layers = True  # one MLP, c and L for all layers
    shift_invariant = False  # relative family, but normalised by the query's position past L (pebench.testing)
    options = {
        "hidden": Option(32, "hidden units of the MLP", type=int, low=1),
        "threshold": Option(64.0, "initial value of the learned threshold L", low=1.0),
    }

    def __init__(self, ctx: EncodingContext, **options: object) -> None:
        super().__init__(ctx, **options)
        hidden = self.opts["hidden"]
        self.mlp = nn.Sequential(nn.Linear(1, hidden), nn.ReLU(), nn.Linear(hidden, ctx.n_heads))
        self.c = nn.Parameter(torch.tensor(1.0))
        self.threshold = nn.Parameter(torch.tensor(float(self.opts["threshold"])))

    def normalised_distance(self, positions: Tensor) -> Tensor:
        """ψ(i - j) / ψ(max(L, i)) for every (i, j) with the future clamped to distance 0: ``(B or 1, T, T)``."""
        pos = expand_positions(positions).to(self.c.dtype)
        c = self.c.abs()
        dist = (pos[:, :, None] - pos[:, None, :]).clamp(min=0.0)
        denom_pos = torch.maximum(pos, self.threshold.clamp(min=1.0))[:, :, None]
        return torch.log1p(c * dist) / torch.log1p(c * denom_pos)

    def attn_bias(self, q: Tensor, k: Tensor, positions: Tensor, layer: int) -> Tensor:
        x = self.normalised_distance(positions.to(self.c.device))
        out = self.mlp(x.unsqueeze(-1)).movedim(-1, 1)  # (B or 1, H, T, T)
        return out[0] if positions.dim() == 1 else out
