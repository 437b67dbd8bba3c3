"""Position coupling (Cho et al., "Position Coupling: Improving Length Generalization of Arithmetic Transformers
Using Task Structure", NeurIPS 2024, arXiv:2405.20671).

Tokens that play the same part in the task share one position id -- for addition, the digits of equal significance
in both operands and in the sum -- and the ids index a learned absolute table added to the token embeddings (the
paper's main setup, ``abs_learned`` in its reference code, github.com/HanseulJo/position-coupling):

    h_0(t) = E_token[x_t] + P[p_t + s · 1(p_t > 0)],   P in R^{(max_position + 1) x d} learned, N(0, 0.02²)

``p_t`` is the task's :data:`~pebench.tasks.base.COUPLED_POSITION` annotation, the paper's ids with start id 1 (0:
padding; the id rule, with the next-token shift of the sum's ids, is in
:func:`pebench.tasks.common.addition_annotations`). Training, option ``random_start`` (default true, the paper's
``randomize``): each sequence's ids are shifted by its own ``s`` drawn uniformly from ``0 .. max_position - max_t
p_t``, i.e. its start id uniform over every value that keeps its ids within the table, so every row of the table
is trained (the reference draws the start from ``[1, max_position - len(answer)]`` per example,
``AdditionDatasetWithCoupledPositions.__getitem__``), from the trainer's positions generator; with
``random_start=false`` the ids are used as given. Evaluation: no shift (start id 1, as the reference evaluates).

``max_position`` (option; 0, the default: the model's ``max_len``, the task's longest sequence in tokens, which
bounds every id a task evaluates) is the largest id the table holds; the paper sets it per experiment (150 for
training on 1-30 digits and testing up to 100, ``scripts/addition/run_coupling.sh``). An id beyond it at
evaluation is a one-line :class:`~pebench.errors.LengthError`.

Scaling. As for :mod:`~pebench.encodings.abacus`: the table is added to the unscaled token embeddings (the model's
√d_model scaling follows only :meth:`~pebench.encodings.base.PositionalEncoding.embed`), both starting at N(0,
0.02²), as the reference's T5-style decoder adds its learned position table to unscaled token embeddings. The rest of
the model has no positional encoding. Needs a task with ``coupled_position`` annotations (``addition``,
``add_nocarry``, ``binary_addition``); on any other it does not apply. Its training shifts are drawn inside the
forward pass from each seed's own generator, so its seeds train one by one (``packable = False``).
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import Tensor, nn

from pebench.encodings.abacus import offset_per_sequence
from pebench.encodings.base import EncodingContext, PositionalEncoding
from pebench.encodings.registry import register
from pebench.errors import LengthError
from pebench.options import Option
from pebench.tasks.base import COUPLED_POSITION


@register
class Coupling(PositionalEncoding):
    name = "coupling"
    family = "absolute"
    version = "1"
    description = "learned table of coupled position ids (digits of equal significance share one), random start"
    paper = "Cho et al. 2024, arXiv:2405.20671"
    options = {
        "random_start": Option(True, "in training, shift each sequence's ids by a random start that keeps them in the "
                               "table (the paper's); false: ids as given", type=bool),
        "max_position": Option(0, "largest position id of the table (0: the model's max_len)", type=int, low=0,
                               high=1_000_000),
        "init_std": Option(0.02, "std of the table's normal initialisation", low=0.0),
    }  # fmt: skip
    needs = frozenset({COUPLED_POSITION})
    position_indexed = False
    packable = False

    def __init__(self, ctx: EncodingContext, **options: object) -> None:
        super().__init__(ctx, **options)
        self.max_position = int(self.opts["max_position"]) or ctx.max_len
        self.table = nn.Embedding(self.max_position + 1, ctx.d_model)
        nn.init.normal_(self.table.weight, std=self.opts["init_std"])

    def ids(self, coupled: Tensor, generator: torch.Generator | None) -> Tensor:
        """The table rows of ``coupled`` ``(B, T)``: each sequence shifted by its random start in training
        (``generator`` given and ``random_start``), unchanged otherwise; 0 stays 0."""
        if generator is None or not self.opts["random_start"]:
            return coupled
        s = offset_per_sequence((self.max_position - coupled.amax(dim=1)).clamp(min=0), generator)
        return coupled + s * (coupled > 0)

    def embed(self, positions: Tensor, annotations: Mapping[str, Tensor] | None = None,
              generator: torch.Generator | None = None) -> Tensor | None:  # fmt: skip
        if annotations is None:  # the model always passes them (needs); the positions alone give nothing
            return None
        ids = self.ids(annotations[COUPLED_POSITION], generator)
        checkable = ids.device.type == "cpu" or not self.training  # never a host sync in a GPU training step
        if checkable and (int(ids.min()) < 0 or int(ids.max()) > self.max_position):
            raise LengthError(f"coupling: position id {int(ids.max())} is outside the table of ids "
                              f"0..{self.max_position}; raise the option max_position")  # fmt: skip
        return self.table(ids)
