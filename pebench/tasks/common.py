"""Shared building blocks of the sequence-to-sequence tasks (not a task itself).

Layout. A task that maps a prompt to an answer lays a sequence out as

    inputs  = prompt + [SEP] + answer[:-1]
    targets = [IGNORE] * len(prompt) + answer

so the model reads the prompt, then at ``SEP`` predicts the first answer token and at every answer token the next
one (teacher forcing). Everything before ``SEP`` is unscored; the scored region is exactly the answer. A sequence of
a prompt of ``p`` tokens and an answer of ``a`` tokens has ``p + a`` tokens. Exact match under teacher forcing equals
the exact match of greedy decoding: the greedy decoder reproduces the answer iff every teacher-forced argmax is right.

Padding. Sequences shorter than their batch are right-padded with the task's ``PAD`` token and :data:`IGNORE`
targets. Right padding never changes a causal model's outputs at the real tokens, and padding is never scored.

Length ranges. Tasks trained on a range of lengths (:class:`RangeTrainedTask`) draw each training sequence's length
uniformly from the range, generate each length group with :meth:`Task.sample`, and pad the batch to its longest
sequence. Annotations (:attr:`Batch.annotations`) are padded with 0 like the inputs with ``PAD``.
"""

from __future__ import annotations

import random
from typing import Any, ClassVar

import torch
from torch import Tensor

from pebench.errors import OptionError
from pebench.options import Option
from pebench.tasks.base import COUPLED_POSITION, DIGIT_INDEX, IGNORE, Batch, Task, check_tier


def answer_layout(prompt: Tensor, answer: Tensor, sep: int) -> tuple[Tensor, Tensor]:
    """``(inputs, targets)`` of ``prompt + [SEP] + answer[:-1]`` with only the answer scored (see module doc)."""
    b = prompt.shape[0]
    sep_col = torch.full((b, 1), sep, dtype=torch.long)
    inputs = torch.cat([prompt, sep_col, answer[:, :-1]], dim=1)
    targets = torch.cat([torch.full_like(prompt, IGNORE), answer], dim=1)
    return inputs, targets


def list_layout(prompts: list[list[int]], answers: list[list[int]], sep: int, pad: int, width: int,
                annotations: list[dict[str, list[int]]] | None = None) -> Batch:  # fmt: skip
    """The :func:`answer_layout` of sequences built as Python lists (prompts and answers may differ in length from
    row to row), each right-padded to ``width`` tokens with ``pad`` inputs and :data:`IGNORE` targets. ``annotations``
    (one dict per row, each list at least as long as the row's inputs) become the batch's annotations, cut to the
    row's inputs and padded with 0."""
    inputs = torch.full((len(prompts), width), pad, dtype=torch.long)
    targets = torch.full((len(prompts), width), IGNORE, dtype=torch.long)
    names = sorted(annotations[0]) if annotations else []
    ann = {name: torch.zeros((len(prompts), width), dtype=torch.long) for name in names}
    for row, (prompt, answer) in enumerate(zip(prompts, answers, strict=True)):
        seq = [*prompt, sep, *answer[:-1]]
        inputs[row, : len(seq)] = torch.tensor(seq)
        targets[row, len(prompt) : len(prompt) + len(answer)] = torch.tensor(answer)
        for name in names:
            ann[name][row, : len(seq)] = torch.tensor(annotations[row][name][: len(seq)])  # type: ignore[index]
    return Batch(inputs, targets, annotations=ann or None)


def addition_annotations(len_a: int, len_b: int, len_sum: int, operands_reversed: bool, sum_reversed: bool,
                         sum_width: int) -> dict[str, list[int]]:  # fmt: skip
    """:data:`DIGIT_INDEX` and :data:`COUPLED_POSITION` of the written addition ``a PLUS b SEP c`` (``len_a``,
    ``len_b`` and ``len_sum`` digits; the ``END`` after ``c`` is a target only, never an input), one entry per token.

    ``digit_index`` (McLeish et al. 2024, arXiv:2405.17399, Abacus embeddings): 1, 2, .. along each number as it is
    written, 0 for ``PLUS`` and ``SEP``.

    ``coupled_position`` (Cho et al. 2024, arXiv:2405.20671), the rule of their reference code
    (github.com/HanseulJo/position-coupling: ``src/data/addition.py``, ``AdditionDatasetWithCoupledPositions``, and
    ``src/tokenization/tokenization.py``, ``tokenize_for_decoder``), with the start id ``s = 1`` (the evaluation
    value; the encoding adds the training offset, :mod:`pebench.encodings.coupling`):

    * a digit of significance ``j`` (0 = units) gets ``s + 1 + j`` in both operands and in the sum, whatever the
      order it is written in, so digits of equal significance share an id;
    * ``PLUS`` gets ``s``;
    * ``SEP`` (the ``=``) gets ``s`` when the sum is written least significant digit first, and
      ``s + sum_width + 1`` when it is written most significant first (``sum_width``: the sum's width in the paper's
      format, which zero-pads the sum to one digit more than the longer operand, so the id depends on the operands
      only and never gives away the sum's length). This is the one-token shift of next-token prediction: the token
      that predicts a sum digit (``SEP`` for the first, else the previous sum digit) carries the id one step before
      that digit's, ``s + j`` for the digit ``s + 1 + j`` written least significant first, ``s + 2 + j`` written
      most significant first;
    * ``BOS``, ``EOS`` and padding get 0 in the reference code; here there is no ``BOS``, ``END`` is never an input
      and padding is 0 (:func:`list_layout`).

    The reference zero-pads both operands to the longer one's length; pebench's tasks do not, which changes no id
    of an existing digit (ids follow significance), only leaves out those of the padding zeros."""

    def significance(n: int, least_first: bool) -> list[int]:
        return list(range(n)) if least_first else list(range(n - 1, -1, -1))

    def ids(n: int, least_first: bool) -> list[int]:
        return [2 + j for j in significance(n, least_first)]  # s + 1 + j with s = 1

    eq = 1 if sum_reversed else sum_width + 2
    coupled = [*ids(len_a, operands_reversed), 1, *ids(len_b, operands_reversed), eq, *ids(len_sum, sum_reversed)]
    index = [*range(1, len_a + 1), 0, *range(1, len_b + 1), 0, *range(1, len_sum + 1)]
    return {DIGIT_INDEX: index, COUPLED_POSITION: coupled}


def python_random(generator: torch.Generator) -> random.Random:
    """A :class:`random.Random` seeded by one draw from ``generator``: for generators that build each sequence in
    Python (recursive expressions, big integers). The samples stay a deterministic function of ``generator``."""
    return random.Random(int(torch.randint(0, 2**62, (1,), generator=generator)))


def pad_to(batch: Batch, width: int, pad: int) -> Batch:
    """Right-pad ``batch`` to ``width`` tokens with ``pad`` inputs and :data:`IGNORE` targets."""
    extra = width - batch.inputs.shape[1]
    if extra < 0:
        raise ValueError(f"cannot pad a batch of width {batch.inputs.shape[1]} to {width}")
    if extra == 0:
        return batch
    b = batch.inputs.shape[0]
    inputs = torch.cat([batch.inputs, torch.full((b, extra), pad, dtype=torch.long)], dim=1)
    targets = torch.cat([batch.targets, torch.full((b, extra), IGNORE, dtype=torch.long)], dim=1)
    ann = None
    if batch.annotations is not None:
        ann = {k: torch.cat([v, torch.zeros((b, extra), dtype=v.dtype)], dim=1) for k, v in batch.annotations.items()}
    return Batch(inputs, targets, annotations=ann)


def concat_padded(batches: list[Batch], pad: int) -> Batch:
    """Stack batches of different widths into one, right-padding each to the widest (annotations with 0)."""
    width = max(b.inputs.shape[1] for b in batches)
    padded = [pad_to(b, width, pad) for b in batches]
    ann = None
    if padded[0].annotations is not None:
        ann = {k: torch.cat([b.annotations[k] for b in padded]) for k in padded[0].annotations}  # type: ignore[index]
    return Batch(torch.cat([b.inputs for b in padded]), torch.cat([b.targets for b in padded]), annotations=ann)


class RangeTrainedTask(Task):
    """A task trained on lengths ``train_min .. train_length`` and evaluated at lengths given per tier.

    Subclasses set ``train_min``, ``train_length`` (the training maximum), ``pad_token`` and the evaluation lengths
    ``quick_lengths`` / ``full_lengths``.
    """

    train_min: int = 1
    pad_token: int = 0
    quick_lengths: ClassVar[tuple[int, ...]] = ()
    full_lengths: ClassVar[tuple[int, ...]] = ()

    @property
    def train_range(self) -> tuple[int, int]:
        return self.train_min, self.train_length

    def eval_lengths(self, tier: str = "quick") -> list[int]:
        check_tier(tier)
        return sorted(self.quick_lengths if tier == "quick" else set(self.full_lengths) | set(self.quick_lengths))

    def sample_train(self, batch_size: int, generator: torch.Generator) -> Batch:
        lengths = torch.randint(self.train_min, self.train_length + 1, (batch_size,), generator=generator)
        groups = [self.sample(int((lengths == n).sum()), n, generator, "train") for n in sorted(set(lengths.tolist()))]
        return concat_padded(groups, self.pad_token)


def algorithmic_lengths(train: tuple[int, int], ood: tuple[int, int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(quick, full) evaluation lengths: quick is the training maximum, both ends of the OOD range, 2x and 4x the
    training maximum; full is every training and OOD length plus 2x and 4x."""
    hi = train[1]
    quick = tuple(sorted({hi, ood[0], ood[1], 2 * hi, 4 * hi}))
    full = tuple(sorted({*range(train[0], hi + 1), *range(ood[0], ood[1] + 1), 2 * hi, 4 * hi}))
    return quick, full


class ItemStringTask(RangeTrainedTask):
    """A string of ``n`` items over ``0..N-1`` (N = option ``n_items``), then SEP and an answer of ``n`` items
    (``2n`` tokens, only the answer scored, exact match). Subclasses set ``name``, the lengths and :meth:`answer`,
    and may override :meth:`draw` (how the items are drawn) and the chance level."""

    options = {"n_items": Option(32, "number of distinct items N", type=int, low=2, high=100_000)}
    metric = "exact_match"
    min_length = 1

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.n_items = int(self.opts["n_items"])
        self.sep, self.pad_token = self.n_items, self.n_items + 1

    @property
    def vocab_size(self) -> int:
        return self.n_items + 2

    @property
    def chance_level(self) -> float:
        """A predictor uniform over the ``N^n`` answers at the training maximum ``n``."""
        return float(self.n_items) ** -self.train_length

    def tokens(self, length: int) -> int:
        return 2 * length

    def draw(self, batch_size: int, length: int, generator: torch.Generator) -> Tensor:
        """The prompt items, ``(batch_size, length)``: i.i.d. uniform by default."""
        return torch.randint(0, self.n_items, (batch_size, length), generator=generator)

    def answer(self, items: Tensor) -> Tensor:
        raise NotImplementedError

    def sample(self, batch_size: int, length: int, generator: torch.Generator, split: str = "train") -> Batch:
        self.check_length(length)
        self.check_split(split)
        x = self.draw(batch_size, length, generator)
        return Batch(*answer_layout(x, self.answer(x), self.sep))


CHOMSKY_TRAIN = (1, 40)
CHOMSKY_FULL_MAX = 500  # the papers' longest evaluation length


def train_max_option(default: int) -> Option:
    """The ``train_max`` option of a Chomsky task with its default (the papers' is 40)."""
    paper = "" if default == CHOMSKY_TRAIN[1] else f"; the papers' protocol: {CHOMSKY_TRAIN[1]}"
    return Option(default, f"longest training length m (quick tier: m, 2m, 4m{paper})", type=int, low=1, high=10_000)


class ChomskyTask(RangeTrainedTask):
    """The Chomsky-hierarchy protocol (Delétang et al., "Neural Networks and the Chomsky Hierarchy", ICLR 2023,
    arXiv:2207.02098; Ruoss et al., "Randomized Positional Encodings Boost Length Generalization of Transformers",
    ACL 2023, arXiv:2305.16843): train on input lengths 1-40, evaluate at every length 41-500 (full tier; the
    length-generalisation score is the mean over all of 41..500, 41 included) or at 40, 80 and 160 (quick tier).
    The metric is the per-token accuracy on the output tape (the answer region).

    Option ``train_max`` (default 40, the papers' value, unless a task sets a shorter default with
    :func:`train_max_option`) moves the training maximum ``m``: training draws lengths ``train_min .. m``, the quick
    tier evaluates ``m, 2m, 4m`` and the full tier every length ``m .. max(500, 4m)``. A shorter ``m`` is how a task
    the default model cannot learn at 40 becomes learnable (parity, modular_arithmetic, binary_addition);
    ``--task-options T:train_max=40`` restores the papers' protocol."""

    train_min, train_length = CHOMSKY_TRAIN
    min_length = 1
    paper = "Delétang et al. 2023, arXiv:2207.02098; Ruoss et al. 2023, arXiv:2305.16843"
    options = {"train_max": train_max_option(CHOMSKY_TRAIN[1])}

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        m = int(self.opts["train_max"])
        if m < self.train_min:
            raise OptionError(f"task {self.name}: option train_max={m} is below its shortest length {self.train_min}")
        self.train_length = m
        self.quick_lengths = (m, 2 * m, 4 * m)
        self.full_lengths = tuple(range(m, max(CHOMSKY_FULL_MAX, 4 * m) + 1))


class SymbolStringTask(ChomskyTask):
    """A Chomsky task whose input is ``n`` symbols drawn i.i.d. uniform over ``0 .. n_input - 1`` and whose answer,
    over ``0 .. n_output - 1``, is a function of them (:meth:`answer`, :meth:`answer_length` tokens). Tokens: the
    symbols, ``SEP = max(n_input, n_output)``, ``PAD = SEP + 1``; chance level ``1 / n_output``."""

    n_input: ClassVar[int]
    n_output: ClassVar[int]

    @property
    def sep(self) -> int:
        return max(self.n_input, self.n_output)

    @property
    def pad_token(self) -> int:  # type: ignore[override]
        return self.sep + 1

    @property
    def vocab_size(self) -> int:
        return self.sep + 2

    @property
    def chance_level(self) -> float:
        return 1.0 / self.n_output

    def answer_length(self, length: int) -> int:
        raise NotImplementedError

    def answer(self, x: Tensor) -> Tensor:
        raise NotImplementedError

    def tokens(self, length: int) -> int:
        return length + self.answer_length(length)

    def sample(self, batch_size: int, length: int, generator: torch.Generator, split: str = "train") -> Batch:
        self.check_length(length)
        self.check_split(split)
        x = torch.randint(0, self.n_input, (batch_size, length), generator=generator)
        return Batch(*answer_layout(x, self.answer(x), self.sep))
