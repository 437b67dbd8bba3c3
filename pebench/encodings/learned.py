"""Learned absolute positional embeddings (as in GPT-2 / BERT; Gehring et al., "Convolutional Sequence to Sequence
Learning", ICML 2017).

    h_0(pos) = E_token[x_pos] + P[pos],   P in R^{max_len x d} learned, initialised N(0, 0.02^2)

The table covers ``max_len`` positions, which the suite sets to the longest evaluation length of the task, so every
evaluation length can be embedded. Rows for positions past the training length never receive a gradient: at
evaluation they keep their random initial vectors. That is the honest behaviour of a learned table outside its
trained range, and why it is expected to extrapolate poorly. Positions >= ``max_len`` are an error.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from pebench.encodings.base import EncodingContext, PositionalEncoding
from pebench.encodings.registry import register
from pebench.errors import LengthError
from pebench.options import Option


@register
class Learned(PositionalEncoding):
    name = "learned"
    family = "absolute"
    description = "learned absolute table (untrained rows keep their initial vectors)"
    paper = "Gehring et al. 2017, arXiv:1705.03122; Radford et al. 2019 (GPT-2)"
    options = {"init_std": Option(0.02, "std of the table's normal initialisation", low=0.0)}

    def __init__(self, ctx: EncodingContext, **options: object) -> None:
        super().__init__(ctx, **options)
        self.table = nn.Embedding(ctx.max_len, ctx.d_model)
        nn.init.normal_(self.table.weight, std=self.opts["init_std"])

    def embed(self, positions: Tensor) -> Tensor:
        if self._checkable(positions):
            self._check_range(positions)
        return self.table(positions)

    def _checkable(self, positions: Tensor) -> bool:
        """Whether to read the positions' range on the host: on the CPU (free), or at evaluation on a GPU (once per
        batch); never inside a GPU training step (a host sync) nor under vmap (packed seeds, checked before)."""
        if torch._C._functorch.is_batchedtensor(positions):
            return False
        return positions.device.type == "cpu" or not self.training

    def _check_range(self, positions: Tensor) -> None:
        top, bottom = int(positions.max()), int(positions.min())
        if top >= self.ctx.max_len or bottom < 0:
            bad = bottom if bottom < 0 else top
            raise LengthError(
                f"learned: position {bad} is outside the table of {self.ctx.max_len} positions; "
                f"valid positions: 0..{self.ctx.max_len - 1}"
            )
