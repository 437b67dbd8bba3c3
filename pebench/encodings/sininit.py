"""A learned absolute table initialised with the sinusoid (from the positional-encoding studies this project grew
out of): the fixed table of Vaswani et al. 2017, §3.5, used as the starting point of a trainable one.

    P ∈ R^{max_len x d} learned,   P[pos, 2i] = sin(pos / base^(2i/d)),  P[pos, 2i+1] = cos(pos / base^(2i/d))  at init

added to the token embeddings. As with ``learned``, rows past the training length get no gradient and keep their
initial (here sinusoidal) values. Positions >= ``max_len`` are an error.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from pebench.encodings.base import EncodingContext, PositionalEncoding
from pebench.encodings.registry import register
from pebench.encodings.sinusoidal import sinusoid_table
from pebench.errors import LengthError
from pebench.options import Option


@register
class SinInit(PositionalEncoding):
    name = "sininit"
    family = "absolute"
    description = "learned absolute table initialised with the sin/cos sinusoid"
    paper = "positional-encoding studies; Vaswani et al. 2017, arXiv:1706.03762"
    options = {"base": Option(10000.0, "wavelength base of the initial sinusoid", low=1.0, low_open=True)}

    def __init__(self, ctx: EncodingContext, **options: object) -> None:
        super().__init__(ctx, **options)
        self.table = nn.Embedding(ctx.max_len, ctx.d_model)
        with torch.no_grad():
            self.table.weight.copy_(sinusoid_table(torch.arange(ctx.max_len), ctx.d_model, self.opts["base"]))

    def embed(self, positions: Tensor) -> Tensor:
        top = int(positions.max())
        if top >= self.ctx.max_len or int(positions.min()) < 0:
            raise LengthError(
                f"sininit: position {top} is outside the table of {self.ctx.max_len} positions; "
                f"valid positions: 0..{self.ctx.max_len - 1}"
            )
        return self.table(positions)
