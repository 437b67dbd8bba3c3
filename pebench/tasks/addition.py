"""Addition with carries: the sum of two decimal numbers, digits least significant first by default.

Source: the multi-digit addition task of McLeish et al., "Transformers Can Do Arithmetic with the Right
Embeddings", NeurIPS 2024, arXiv:2405.17399 (Abacus embeddings; train on operands of 1-20 digits, every pair of
operand lengths equally often, test up to 100 digits and beyond) and of Cho et al., "Position Coupling: Improving
Length Generalization of Arithmetic Transformers Using Task Structure", NeurIPS 2024, arXiv:2405.20671 (train 1-30
digits, test up to 200; the sum reversed).

Definition. The task length ``n`` is the number of digits of each operand at evaluation. An operand of ``k`` digits
is uniform over ``10^{k-1} .. 10^k - 1`` (no leading zero; 1-9 for one digit, as in McLeish et al.'s generator). At
evaluation both operands have exactly ``n`` digits (the diagonal of McLeish et al.'s operand-length grid). In
training the operand lengths ``i`` and ``j`` are drawn independently and uniformly from ``1 .. m`` (option
``train_max``, default 3; McLeish et al.: 20), so every pair of lengths is equally frequent (their
"bucket" sampling). The answer is the sum's digits, then ``END``; carries make a digit depend on every less
significant digit of both operands. Tokens: digits ``0 .. 9``, ``PLUS = 10``, ``SEP = 11`` (the ``=`` sign),
``END = 12``, ``PAD = 13`` (vocabulary 14).

    inputs  = a  PLUS  b  SEP  c[:-1]              targets = IGNORE x (len a + len b + 1)  c  END

Digit order (option ``digits``):

- ``reversed`` (default; McLeish et al.'s "reverse all"): operands and sum least significant digit first, so the
  answer is written in the order carries propagate. ``a = 57, b = 68``: ``7 5 + 8 6 = 5 2 1 END``.
- ``reversed_sum``: operands as usually written, the sum least significant digit first (Cho et al.'s answer order,
  without their zero padding of the operands): ``5 7 + 6 8 = 5 2 1 END``.
- ``plain``: everything most significant digit first: ``5 7 + 6 8 = 1 2 5 END``.

The sum of two ``n``-digit operands has ``n`` or ``n + 1`` digits, so a sequence is padded to ``3n + 3`` tokens.
Metric: exact match of the answer (every sum digit and ``END``). Chance level at the training maximum ``m``: a
predictor uniform over the ``18 * 10^{m-1} - 1`` possible sums of two ``m``-digit numbers.

Lengths: training ``1 .. m``; out of distribution ``m + 1 .. 5m`` (McLeish et al.'s 20 -> 100 ratio). Quick tier:
``m``, ``m + 1``, ``2m``, ``4m`` and ``5m``; full tier every length ``1 .. 5m``.

Defaults (version 2): ``train_max=3`` and 2400 steps, so that a core encoding learns the task in distribution at the
default model (learned absolute positions do; no core encoding gets a longer sum right). At version 1's
``train_max=5`` none of them left 0 with 1200 or 2400 steps (learned positions only partly at ``train_max=4`` with
2400), while Abacus learned it with 1200 steps (studies/task_defaults, "The ten tasks of issue 15 (version 2
defaults)"). McLeish et al.'s protocol is ``--task-options addition:train_max=20`` (with far more steps than a CPU
default allows).

Annotations (:data:`~pebench.tasks.base.DIGIT_INDEX` and :data:`~pebench.tasks.base.COUPLED_POSITION`, on every
training and evaluation batch, 0 at padding; rules in :func:`~pebench.tasks.common.addition_annotations`):

- ``digit_index`` (Abacus embeddings, McLeish et al.): each digit's 1-based index within its number as written, 0
  for ``PLUS`` and ``SEP``. ``7 5 + 8 6 = 5 2 1`` (``reversed``): ``1 2 0 1 2 0 1 2 3``. In ``reversed`` order the
  index is the significance plus one, as McLeish et al. need ("integers must be reversed"); in the other orders it
  is only the place as written.
- ``coupled_position`` (position coupling, Cho et al.): a digit of significance ``j`` gets ``2 + j`` in both
  operands and the sum; ``PLUS`` gets 1; ``SEP`` gets 1 when the sum is reversed and ``m' + 3`` when it is
  written most significant first (``m'`` the longer operand's digit count: the paper's zero-padded sum has
  ``m' + 1`` digits). ``reversed``: ``7 5 + 8 6 = 5 2 1`` -> ``2 3 1 2 3 1 2 3 4``; ``reversed_sum``: ``5 7 + 6 8 =
  5 2 1`` -> ``3 2 1 3 2 1 2 3 4``; ``plain``: ``5 7 + 6 8 = 1 2 5`` -> ``3 2 1 3 2 5 4 3 2``.

Operand-length grid (option ``grid``, off by default; evaluation only, so one trained model serves both): McLeish et
al. score every pair of operand lengths ``(len a, len b)`` separately (their Fig. 1 and the other addition heatmaps:
exact match per pair, 1-100 digits per operand, the training square outlined; their released code,
github.com/mcleish7/arithmetic ``arithmetic_eval_quicker.py``, draws 100 problems per pair). With
``grid=true`` the case at length ``n`` also scores each cell ``(i, j)`` with ``max(i, j) = n`` -- the ``2n - 1``
pairs whose longer operand has ``n`` digits -- on ``--eval-samples`` problems each, with ``a`` of exactly ``i`` and
``b`` of exactly ``j`` digits drawn as above (evaluation split :func:`~pebench.tasks.grid.cell_split`, e.g.
``cell2x5``, padded to ``3n + 3`` tokens like the case's own sequences). The cell ``(n, n)`` is the case's own
``test`` split. The cells are stored with the result (:mod:`pebench.tasks.grid`) and the report draws them as a
``len a x len b`` heatmap per encoding; the full tier (every length ``1 .. 5m``) fills the whole ``5m x 5m`` grid,
the quick tier the L-shaped shells of its five lengths. With the grid off the task's configuration is what it was
before the option existed (the option is left out of it), so earlier results keep their config hashes.
"""

from __future__ import annotations

from typing import Any

import torch

from pebench.options import Option
from pebench.tasks.base import COUPLED_POSITION, DIGIT_INDEX, Batch
from pebench.tasks.common import (
    RangeTrainedTask,
    addition_annotations,
    algorithmic_lengths,
    list_layout,
    python_random,
)
from pebench.tasks.grid import GridEvaluated, cell_split, parse_cell_split
from pebench.tasks.registry import register

PLUS, SEP, END, PAD = 10, 11, 12, 13
ORDERS = ("reversed", "reversed_sum", "plain")


def decimal_digits(value: int, least_first: bool) -> list[int]:
    digits = [int(c) for c in str(value)]
    return digits[::-1] if least_first else digits


@register
class Addition(GridEvaluated, RangeTrainedTask):
    name = "addition"
    version = "2"
    description = "sum of two decimal numbers with carries, digits reversed (train 1-3 digits; OOD to 15); exact match"
    paper = "McLeish et al. 2024, arXiv:2405.17399; Cho et al. 2024, arXiv:2405.20671"
    options = {
        "train_max": Option(3, "longest operand in training, m digits (OOD m+1 .. 5m; McLeish et al.: 20)", type=int,
                            low=1, high=1000),
        "digits": Option("reversed", "digit order: reversed (operands and sum least significant first, McLeish et "
                         "al.), reversed_sum (only the sum reversed, Cho et al.) or plain", type=str, choices=ORDERS),
        "grid": Option(False, "also score every operand-length pair (len a, len b) whose longer operand has the case's "
                       "length, for McLeish et al.'s grid heatmap (evaluation only)", type=bool, eval_only=True),
    }  # fmt: skip
    metric = "exact_match"
    default_steps = 2400
    train_min = 1
    min_length = 1
    pad_token = PAD
    annotations = frozenset({DIGIT_INDEX, COUPLED_POSITION})
    grid_axes = ("digits of a", "digits of b")

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        m = int(self.opts["train_max"])
        self.train_length = m
        self.quick_lengths, self.full_lengths = algorithmic_lengths((1, m), (m + 1, 5 * m))
        self.order = str(self.opts["digits"])
        self.grid = bool(self.opts["grid"])

    def config(self) -> dict[str, Any]:
        """The task's configuration; ``grid`` only when it is on (results from before the option keep their hash)."""
        config = super().config()
        if not self.grid:
            del config["options"]["grid"]
        return config

    def grid_cells(self, length: int) -> dict[tuple[int, int], str]:
        """With ``grid`` on: every ``(i, j)`` with ``max(i, j) = length``, the diagonal cell as the ``test`` split."""
        if not self.grid:
            return {}
        shell = [(i, length) for i in range(1, length + 1)] + [(length, j) for j in range(1, length)]
        return {(i, j): self.eval_splits[0] if i == j else cell_split(i, j) for i, j in sorted(shell)}

    def check_split(self, split: str) -> None:
        if parse_cell_split(split) is None:
            super().check_split(split)

    @property
    def vocab_size(self) -> int:
        return 14

    @property
    def chance_level(self) -> float:
        return 1.0 / (18 * 10 ** (self.train_length - 1) - 1)

    def tokens(self, length: int) -> int:
        return 3 * length + 3

    def operand(self, n_digits: int, rng: Any) -> int:
        return rng.randint(10 ** (n_digits - 1), 10**n_digits - 1)

    def layout(self, pairs: list[tuple[int, int]], width: int) -> Batch:
        """The sequences of the operand pairs, padded to ``width`` tokens."""
        rev_operands = self.order == "reversed"
        rev_sum = self.order != "plain"
        prompts = [[*decimal_digits(a, rev_operands), PLUS, *decimal_digits(b, rev_operands)] for a, b in pairs]
        answers = [[*decimal_digits(a + b, rev_sum), END] for a, b in pairs]
        notes = [addition_annotations(len(str(a)), len(str(b)), len(str(a + b)), rev_operands, rev_sum,
                                      max(len(str(a)), len(str(b))) + 1) for a, b in pairs]  # fmt: skip
        return list_layout(prompts, answers, SEP, PAD, width, notes)

    def sample(self, batch_size: int, length: int, generator: torch.Generator, split: str = "train") -> Batch:
        self.check_length(length)
        self.check_split(split)
        i, j = parse_cell_split(split) or (length, length)  # a grid cell's operand lengths, else both n digits
        if not (1 <= i <= length and 1 <= j <= length):
            raise ValueError(f"task {self.name}: split {split!r} does not fit length {length}; valid cells: "
                             f"cell<i>x<j> with 1 <= i, j <= {length}")
        rng = python_random(generator)
        pairs = [(self.operand(i, rng), self.operand(j, rng)) for _ in range(batch_size)]
        return self.layout(pairs, self.tokens(length))

    def sample_train(self, batch_size: int, generator: torch.Generator) -> Batch:
        """Operand lengths ``i``, ``j`` drawn independently per sequence from ``1 .. m``; padded to the longest."""
        rng = python_random(generator)
        m = self.train_length
        sizes = [(rng.randint(1, m), rng.randint(1, m)) for _ in range(batch_size)]
        pairs = [(self.operand(i, rng), self.operand(j, rng)) for i, j in sizes]
        width = max(i + j + max(i, j) + 3 for i, j in sizes)  # a PLUS b SEP, up to max(i, j) + 1 digits and END
        return self.layout(pairs, width)
