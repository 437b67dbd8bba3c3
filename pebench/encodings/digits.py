"""Positions written out as digits across the embedding dimensions (from the positional-encoding studies this
project grew out of).

``binary``: dimension k (k = 0 .. d-1) holds bit d-1-k of the position, so the most significant bit comes first and
the number is zero-padded on the left to d bits:

    PE(pos, k) = floor(pos / 2^(d-1-k)) mod 2                      ∈ {0, 1}
    binary_norm:  2·PE(pos, k) - 1                                  ∈ {-1, +1}

``decimal``: one decimal digit per dimension, most significant first, zero-padded to d digits:

    PE(pos, k) = floor(pos / 10^(d-1-k)) mod 10                     ∈ {0 .. 9}
    decimal_norm: (PE(pos, k) - 4.5) / 4.5                          ∈ [-1, 1]

The vector is added to the token embeddings. Positions are integers < 2^62; the digits of higher weight are 0.
Example (d = 8): binary(5) = 0 0 0 0 0 1 0 1, decimal(305) = 0 0 0 0 0 3 0 5.
"""

from __future__ import annotations

from typing import ClassVar

import torch
from torch import Tensor

from pebench.encodings.base import PositionalEncoding
from pebench.encodings.registry import register
from pebench.errors import LengthError


def digit_table(positions: Tensor, n_digits: int, radix: int) -> Tensor:
    """The base-``radix`` digits of ``positions``, most significant first, zero-padded: ``(*shape, n_digits)`` int64.

    Weights ``radix^e`` that do not fit in int64 give digit 0 (every position is smaller than them).
    """
    pos = positions.to(torch.int64)
    if int(pos.min()) < 0:
        raise LengthError(f"digit encodings need non-negative positions, got {int(pos.min())}")
    exponents = list(range(n_digits - 1, -1, -1))
    max_exp = 0
    while radix ** (max_exp + 1) < 2**62:
        max_exp += 1
    out = torch.zeros(*pos.shape, n_digits, dtype=torch.int64, device=pos.device)
    for k, e in enumerate(exponents):
        if e <= max_exp:
            out[..., k] = torch.div(pos, radix**e, rounding_mode="floor") % radix
    return out


class DigitEncoding(PositionalEncoding):
    """Shared implementation: ``radix`` and the map from a digit to the vector's value."""

    radix: ClassVar[int] = 2
    normalized: ClassVar[bool] = False

    def embed(self, positions: Tensor) -> Tensor:
        digits = digit_table(positions, self.ctx.d_model, self.radix).to(torch.float32)
        if self.normalized:
            half = (self.radix - 1) / 2.0
            digits = (digits - half) / half
        return digits


@register
class Binary(DigitEncoding):
    name = "binary"
    family = "absolute"
    description = "absolute: the position in binary across the dimensions, most significant bit first"
    paper = "positional-encoding studies (this project's origin)"
    radix = 2


@register
class BinaryNorm(DigitEncoding):
    name = "binary_norm"
    family = "absolute"
    description = "absolute: binary position with bits {0,1} mapped to {-1,+1}"
    paper = "positional-encoding studies (this project's origin)"
    radix = 2
    normalized = True


@register
class Decimal(DigitEncoding):
    name = "decimal"
    family = "absolute"
    description = "absolute: the position's decimal digits, one per dimension, zero-padded"
    paper = "positional-encoding studies (this project's origin)"
    radix = 10


@register
class DecimalNorm(DigitEncoding):
    name = "decimal_norm"
    family = "absolute"
    description = "absolute: decimal digits mapped to (digit - 4.5) / 4.5"
    paper = "positional-encoding studies (this project's origin)"
    radix = 10
    normalized = True
