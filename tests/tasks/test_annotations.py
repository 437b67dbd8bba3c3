"""Per-token task annotations (issue 15): ``digit_index`` (McLeish et al. 2024, Abacus embeddings) and
``coupled_position`` (Cho et al. 2024, position coupling) of the addition tasks, checked against examples written out
by hand from the papers' rules and against an independent re-derivation from the tokens; padding 0; on every
training and evaluation batch, with the inputs' shape.

The rules, from the papers and Cho et al.'s reference code (github.com/HanseulJo/position-coupling,
``src/data/addition.py``): the digit index is 1, 2, .. along each number as written, 0 elsewhere; the coupled id of
a digit of significance j is 2 + j (start id 1), ``+`` gets 1, ``=`` gets 1 when the sum is written least
significant digit first and (sum width) + 2 when most significant first, padding 0."""

from __future__ import annotations

import pytest
import torch

from pebench import tasks
from pebench.tasks.base import ANNOTATIONS, COUPLED_POSITION, DIGIT_INDEX

PLUS, SEP, END, PAD = 10, 11, 12, 13

# 57 + 68 = 125, the sequence as written (inputs: everything but END), then by hand per token
HAND = {
    "reversed": (  # 7 5 + 8 6 = 5 2 1 END
        [7, 5, PLUS, 8, 6, SEP, 5, 2, 1],
        [1, 2, 0, 1, 2, 0, 1, 2, 3],
        # units 7, 8, 5 -> 2; tens 5, 6, 2 -> 3; hundreds 1 -> 4; + and = -> 1
        [2, 3, 1, 2, 3, 1, 2, 3, 4],
    ),
    "reversed_sum": (  # 5 7 + 6 8 = 5 2 1 END (Cho et al.'s order)
        [5, 7, PLUS, 6, 8, SEP, 5, 2, 1],
        [1, 2, 0, 1, 2, 0, 1, 2, 3],
        [3, 2, 1, 3, 2, 1, 2, 3, 4],
    ),
    "plain": (  # 5 7 + 6 8 = 1 2 5 END; '=' gets 3 (sum width, 2 + 1) + 2 = 5, one above the hundreds' 4
        [5, 7, PLUS, 6, 8, SEP, 1, 2, 5],
        [1, 2, 0, 1, 2, 0, 1, 2, 3],
        [3, 2, 1, 3, 2, 5, 4, 3, 2],
    ),
}


@pytest.mark.parametrize("order", list(HAND))
def test_addition_annotations_of_57_plus_68_by_hand(order):
    task = tasks.build("addition", {"digits": order})
    tokens, digit_index, coupled = HAND[order]
    batch = task.layout([(57, 68), (3, 4)], 12)  # a second, shorter row: padded
    assert batch.inputs[0, :9].tolist() == tokens
    assert batch.annotations[DIGIT_INDEX][0].tolist() == digit_index + [0, 0, 0]
    assert batch.annotations[COUPLED_POSITION][0].tolist() == coupled + [0, 0, 0]
    # 3 + 4 = 7: one digit each; '=' plain gets (1 + 1) + 2 = 4
    eq = 1 if order != "plain" else 4
    assert batch.annotations[DIGIT_INDEX][1].tolist() == [1, 0, 1, 0, 1] + [0] * 7
    assert batch.annotations[COUPLED_POSITION][1].tolist() == [2, 1, 2, eq, 2] + [0] * 7


def test_plain_order_equals_sign_does_not_depend_on_the_sum_length():
    """12 + 34 = 46 has no carry out: '=' still gets 2 + 1 + 2 = 5 (the paper's zero-padded sum is 3 digits wide),
    so the id never tells the model whether the sum has a carry out."""
    batch = tasks.build("addition", {"digits": "plain"}).layout([(12, 34)], 8)
    assert batch.inputs[0].tolist() == [1, 2, PLUS, 3, 4, SEP, 4, 6]
    assert batch.annotations[COUPLED_POSITION][0].tolist() == [3, 2, 1, 3, 2, 5, 3, 2]


def expected_annotations(row: list[int], order: str, pad: int) -> tuple[list[int], list[int]]:
    """The annotations of one addition row re-derived from its tokens by the papers' rules (not the task's code)."""
    seq = [t for t in row if t != pad]
    sep = seq.index(SEP)
    a_plus_b, total = seq[:sep], seq[sep + 1 :]
    plus = a_plus_b.index(PLUS)
    numbers = [a_plus_b[:plus], a_plus_b[plus + 1 :], total]
    digit_index = [*range(1, len(numbers[0]) + 1), 0, *range(1, len(numbers[1]) + 1), 0, *range(1, len(total) + 1)]
    operands_first = order == "reversed"
    sum_first = order != "plain"
    # the value of the sum (it is all in the inputs: END is never an input) gives its full width
    a, b = (int("".join(map(str, n[::-1] if operands_first else n))) for n in numbers[:2])
    assert int("".join(map(str, total[::-1] if sum_first else total))) == a + b
    width = max(len(str(a)), len(str(b))) + 1

    def sig(n: int, least_first: bool) -> list[int]:
        return [2 + j for j in (range(n) if least_first else reversed(range(n)))]

    coupled = [*sig(len(numbers[0]), operands_first), 1, *sig(len(numbers[1]), operands_first),
               1 if sum_first else width + 2, *sig(len(total), sum_first)]  # fmt: skip
    fill = [0] * (len(row) - len(seq))
    return digit_index + fill, coupled + fill


@pytest.mark.parametrize("order", ["reversed", "reversed_sum", "plain"])
def test_addition_annotations_on_train_and_eval_batches(order):
    task = tasks.build("addition", {"digits": order})
    assert task.annotations == {DIGIT_INDEX, COUPLED_POSITION} and task.annotations <= set(ANNOTATIONS)
    gen = torch.Generator().manual_seed(0)
    for batch in (task.sample_train(16, gen), task.sample(8, 7, gen, "test"),
                  next(task.eval_batches(12, 4, gen, "test", 4))):  # fmt: skip
        assert set(batch.annotations) == task.annotations
        for name, values in batch.annotations.items():
            assert values.shape == batch.inputs.shape and values.dtype == torch.int64, name
            assert (values[batch.inputs == PAD] == 0).all(), name  # padding 0
        for row in range(batch.inputs.shape[0]):
            want_index, want_coupled = expected_annotations(batch.inputs[row].tolist(), order, PAD)
            assert batch.annotations[DIGIT_INDEX][row].tolist() == want_index
            assert batch.annotations[COUPLED_POSITION][row].tolist() == want_coupled
    assert (task.sample_train(64, gen).inputs == PAD).any()  # the training batches were padded somewhere


def test_add_nocarry_annotations():
    task = tasks.build("add_nocarry")
    # 12 + 34 = 46 written most significant first; inputs 1 2 + 3 4 = 4; '=' gets n + 2 = 4 (sum exactly n digits)
    batch = task.sample(1, 2, torch.Generator().manual_seed(0))
    assert batch.inputs.shape == (1, 7)
    assert batch.annotations[DIGIT_INDEX][0].tolist() == [1, 2, 0, 1, 2, 0, 1]
    assert batch.annotations[COUPLED_POSITION][0].tolist() == [3, 2, 1, 3, 2, 4, 3]
    train = task.sample_train(32, torch.Generator().manual_seed(1))  # lengths 2-5, padded to the longest
    for name in (DIGIT_INDEX, COUPLED_POSITION):
        values = train.annotations[name]
        assert values.shape == train.inputs.shape and (values[train.inputs == 12] == 0).all()
    row = int((train.inputs != 12).sum(1).argmax())  # a row of the longest length, n = 5: 16 tokens
    assert train.annotations[COUPLED_POSITION][row].tolist() == [6, 5, 4, 3, 2, 1, 6, 5, 4, 3, 2, 7, 6, 5, 4, 3]


def test_binary_addition_and_multiplication_annotations():
    gen = torch.Generator().manual_seed(3)
    add = tasks.build("binary_addition")
    batch = add.sample(4, 8, gen)
    for row in range(4):
        seq = batch.inputs[row].tolist()
        plus, sep = seq.index(2), seq.index(4)  # PLUS, SEP
        n1, n2 = plus, sep - plus - 1
        n3 = int((batch.inputs[row] < 2).sum()) - n1 - n2  # the sum's bits among the inputs
        assert batch.annotations[DIGIT_INDEX][row].tolist()[: sep + 1 + n3] == [
            *range(1, n1 + 1), 0, *range(1, n2 + 1), 0, *range(1, n3 + 1)]  # fmt: skip
        # little-endian everything: significance j -> 2 + j, PLUS and SEP 1
        assert batch.annotations[COUPLED_POSITION][row].tolist()[: sep + 1 + n3] == [
            *range(2, n1 + 2), 1, *range(2, n2 + 2), 1, *range(2, n3 + 2)]  # fmt: skip
        assert (batch.annotations[COUPLED_POSITION][row, sep + 1 + n3 :] == 0).all()
    mul = tasks.build("binary_multiplication")
    assert mul.annotations == {DIGIT_INDEX}  # Cho et al. couple multiplication by another rule
    assert set(mul.sample_train(4, gen).annotations) == {DIGIT_INDEX}


def test_tasks_without_annotations_carry_none():
    task = tasks.build("k_back")
    assert task.annotations == frozenset()
    assert task.sample_train(2, torch.Generator().manual_seed(0)).annotations is None


def test_batch_to_moves_annotations():
    batch = tasks.build("addition").sample(2, 3, torch.Generator().manual_seed(0)).to("cpu")
    assert set(batch.annotations) == {DIGIT_INDEX, COUPLED_POSITION}
