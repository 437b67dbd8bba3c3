"""Addition without carries: add two n-digit numbers whose digit-wise sums are all below 10.

Source: the algorithmic length-generalisation set of Kazemnejad et al., "The Impact of Positional Encoding on Length
Generalization in Transformers", NeurIPS 2023, arXiv:2305.19466; training and OOD lengths of the published study this
set follows (train 2-5 digits, OOD 6-8, plus 2x and 4x of 5). Restricting to carry-free sums isolates digit alignment
(a purely positional skill) from carry propagation.

Definition. The task length ``n`` is the number of digits of each operand. Digit pairs ``(a_i, b_i)`` are drawn
i.i.d. uniformly from the 55 pairs with ``a_i + b_i < 10``; ``c_i = a_i + b_i``. Numbers are written most
significant digit first (leading zeros allowed: every operand has exactly ``n`` digits). Tokens: digits ``0 .. 9``,
``PLUS = 10``, ``SEP = 11`` (the ``=`` sign), ``PAD = 12`` (vocabulary 13).

    inputs  = a_1 .. a_n  PLUS  b_1 .. b_n  SEP  c_1 .. c_{n-1}
    targets = IGNORE x (2n + 1)                  c_1 .. c_n          (3n + 1 tokens)

Annotations (every training and evaluation batch; 0 at padding; rules in
:func:`~pebench.tasks.common.addition_annotations`): ``digit_index`` ``1 .. n`` along each operand and the sum, 0
for ``PLUS`` and ``SEP``; ``coupled_position`` ``2 + j`` for a digit of significance ``j`` (``c_1``, ``a_1``,
``b_1`` have ``j = n - 1``), 1 for ``PLUS`` and ``n + 2`` for ``SEP`` (the sum is written most significant first and
has exactly ``n`` digits). ``n = 2``, ``1 2 + 3 4 = 4``: digit_index ``1 2 0 1 2 0 1``, coupled ``3 2 1 3 2 4 3``.

Metric: exact match of the ``n`` sum digits. Chance level at the training maximum ``n = 5``: a predictor uniform over
the ``10^5`` five-digit answers, ``1e-5``.
"""

from __future__ import annotations

import torch

from pebench.tasks.base import COUPLED_POSITION, DIGIT_INDEX, Batch
from pebench.tasks.common import RangeTrainedTask, addition_annotations, algorithmic_lengths, answer_layout
from pebench.tasks.registry import register

TRAIN = (2, 5)
OOD = (6, 8)
PLUS, SEP, PAD = 10, 11, 12
# the 55 carry-free digit pairs (a, b) with a + b < 10, one row each
PAIRS = torch.tensor([(a, b) for a in range(10) for b in range(10) if a + b < 10])


@register
class AddNoCarry(RangeTrainedTask):
    name = "add_nocarry"
    version = "1"
    description = "add two n-digit numbers with digit sums < 10 (train n 2-5; OOD 6-8, 10, 20); exact match"
    paper = "Kazemnejad et al. 2023, arXiv:2305.19466"
    metric = "exact_match"
    train_min, train_length = TRAIN
    min_length = 1
    pad_token = PAD
    quick_lengths, full_lengths = algorithmic_lengths(TRAIN, OOD)
    annotations = frozenset({DIGIT_INDEX, COUPLED_POSITION})

    @property
    def vocab_size(self) -> int:
        return 13

    @property
    def chance_level(self) -> float:
        return 10.0**-self.train_length

    def tokens(self, length: int) -> int:
        return 3 * length + 1

    def sample(self, batch_size: int, length: int, generator: torch.Generator, split: str = "train") -> Batch:
        self.check_length(length)
        self.check_split(split)
        pairs = PAIRS[torch.randint(0, len(PAIRS), (batch_size, length), generator=generator)]
        a, b = pairs[..., 0], pairs[..., 1]
        plus = torch.full((batch_size, 1), PLUS, dtype=torch.long)
        inputs, targets = answer_layout(torch.cat([a, plus, b], dim=1), a + b, SEP)
        notes = addition_annotations(length, length, length, False, False, length)  # the same for every row
        ann = {k: torch.tensor(v[: inputs.shape[1]]).expand(batch_size, -1).clone() for k, v in notes.items()}
        return Batch(inputs, targets, annotations=ann)
