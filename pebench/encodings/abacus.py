"""Abacus embeddings (McLeish et al., "Transformers Can Do Arithmetic with the Right Embeddings", NeurIPS 2024,
arXiv:2405.17399).

Every digit token gets a learned vector indexed by its place within its number as written, added to its token
embedding; every other token gets row 0:

    h_0(t) = E_token[x_t] + A[i_t + k · 1(i_t > 0)],   A in R^{(max_len + K + 1) x d} learned, N(0, 0.02²)

``i_t`` is the task's :data:`~pebench.tasks.base.DIGIT_INDEX` annotation (1 = the number's first digit as written, 0
for non-digits), so digits of equal significance share a vector when numbers are written least significant digit
first (``addition``'s default order, McLeish et al.'s "reverse all"). In training an offset ``k`` drawn uniformly
from ``0 .. K`` (option ``max_offset``, the paper's 100) is added to every digit index of a sequence (one ``k`` per
sequence, from the trainer's positions generator), so rows beyond the training lengths are trained too and a longer
number at evaluation meets trained rows; at evaluation ``k = 0``. The reference code
(github.com/mcleish7/arithmetic, ``abacus.py``) draws one ``k`` per batch; here each sequence draws its own (the
same distribution per sequence). The model has no other positional encoding (NoPE plus Abacus; the paper also
pairs Abacus with FIRE, not done here), so the order of non-digit tokens comes only from the causal mask.

Scaling. The table is added to the token embeddings as they are: the model's √d_model scaling of token embeddings
(:class:`pebench.models.ModelConfig`) never follows the vector of an encoding with ``needs``, which this one adds
through :meth:`~pebench.encodings.base.PositionalEncoding.embed` with the task's annotations. As in
the paper's GPT-style models, a learned table of the token embeddings' own initial size is summed with them.
The reference's ``nn.Embedding`` keeps PyTorch's N(0, 1) initialisation; here the table starts at N(0, 0.02²) (option
``init_std``) like the token embeddings, so neither swamps the other at the start.

The table has ``max_len + max_offset + 1`` rows (a number has fewer digits than the longest sequence has tokens), so
no index can fall outside it. Needs a task with ``digit_index`` annotations (``addition``, ``add_nocarry``,
``binary_addition``, ``binary_multiplication``); on any other it does not apply (the suite skips such cases). Its
training offsets are drawn inside the forward pass from each seed's own generator, which packed seeds
(:mod:`pebench.engine.packing`, one vmapped forward for all seeds) cannot do, so its seeds train one by one
(``packable = False``).
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import Tensor, nn

from pebench.encodings.base import EncodingContext, PositionalEncoding
from pebench.encodings.registry import register
from pebench.errors import LengthError
from pebench.options import Option
from pebench.tasks.base import DIGIT_INDEX


def offset_per_sequence(high: Tensor, generator: torch.Generator) -> Tensor:
    """``(n, 1)`` int64 offsets on ``high``'s device, row r uniform over ``0 .. high[r]`` (``high`` ``(n,)`` int64,
    any device): one integer per row drawn on the CPU from ``generator``, then reduced modulo ``high[r] + 1`` on the
    device (no host sync; the bias of the modulo is below 2^-40 for the table sizes used)."""
    draw = torch.randint(0, 2**62, (high.shape[0], 1), generator=generator).to(high.device)
    return draw % (high.reshape(-1, 1) + 1)


@register
class Abacus(PositionalEncoding):
    name = "abacus"
    family = "absolute"
    version = "1"
    description = "learned vector per digit's index in its number, random offset in training; else NoPE"
    paper = "McLeish et al. 2024, arXiv:2405.17399"
    options = {
        "max_offset": Option(100, "largest training offset K: k ~ U{0..K} added to a sequence's digit indices "
                             "(paper: 100)", type=int, low=0, high=100_000),
        "init_std": Option(0.02, "std of the table's normal initialisation", low=0.0),
    }  # fmt: skip
    needs = frozenset({DIGIT_INDEX})
    position_indexed = False
    packable = False

    def __init__(self, ctx: EncodingContext, **options: object) -> None:
        super().__init__(ctx, **options)
        self.max_offset = int(self.opts["max_offset"])
        self.table = nn.Embedding(ctx.max_len + self.max_offset + 1, ctx.d_model)
        nn.init.normal_(self.table.weight, std=self.opts["init_std"])

    def indices(self, digit_index: Tensor, generator: torch.Generator | None) -> Tensor:
        """The table rows of ``digit_index`` ``(B, T)``: shifted by a per-sequence ``k`` in training (``generator``
        given), unchanged at evaluation; 0 stays 0."""
        if generator is None or self.max_offset == 0:
            return digit_index
        k = offset_per_sequence(torch.full_like(digit_index[:, 0], self.max_offset), generator)
        return digit_index + k * (digit_index > 0)

    def embed(self, positions: Tensor, annotations: Mapping[str, Tensor] | None = None,
              generator: torch.Generator | None = None) -> Tensor | None:  # fmt: skip
        if annotations is None:  # the model always passes them (needs); the positions alone give nothing
            return None
        idx = self.indices(annotations[DIGIT_INDEX], generator)
        rows = self.table.num_embeddings
        checkable = idx.device.type == "cpu" or not self.training  # never a host sync in a GPU training step
        if checkable and (int(idx.min()) < 0 or int(idx.max()) >= rows):
            raise LengthError(f"abacus: a digit index is outside the table's rows 0..{rows - 1} (a number longer "
                              f"than the model's {self.ctx.max_len} tokens, or a negative index)")  # fmt: skip
        return self.table(idx)
