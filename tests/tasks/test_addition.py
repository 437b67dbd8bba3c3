"""addition (McLeish et al. 2024, arXiv:2405.17399; Cho et al. 2024, arXiv:2405.20671): labels against Python's own
integer sum in every digit order, the operand-length distribution in training and evaluation, carries, declarations,
determinism and bad options."""

from __future__ import annotations

import random
from collections import Counter

import pytest
import torch

from pebench import tasks
from pebench.errors import LengthError, OptionError
from pebench.tasks import IGNORE

PLUS, SEP, END, PAD = 10, 11, 12, 13
ORDERS = ["reversed", "reversed_sum", "plain"]


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def parse(x: list[int], y: list[int], order: str) -> tuple[str, str, str]:
    """The operands and the sum as usually written (most significant digit first), from one sequence; checks the
    layout ``a PLUS b SEP c[:-1] PAD*`` with targets ``IGNORE* c END IGNORE*``."""
    k = x.index(SEP)
    assert x[:k].count(PLUS) == 1 and all(v < 10 for v in x[:k] if v != PLUS)
    p = x.index(PLUS)
    a, b = "".join(map(str, x[:p])), "".join(map(str, x[p + 1 : k]))
    assert a and b
    scored = [v for v in y if v != IGNORE]
    assert y[:k] == [IGNORE] * k and y[k : k + len(scored)] == scored and scored[-1] == END
    assert x[k + 1 : k + len(scored)] == scored[:-1] and all(v == PAD for v in x[k + len(scored) :])
    c = "".join(map(str, scored[:-1]))
    flip = lambda s: s[::-1]  # noqa: E731
    if order == "reversed":
        a, b, c = flip(a), flip(b), flip(c)
    elif order == "reversed_sum":
        c = flip(c)
    return a, b, c


def check(batch, order: str) -> list[tuple[str, str]]:
    operands = []
    for x, y in zip(batch.inputs.tolist(), batch.targets.tolist(), strict=True):
        a, b, c = parse(x, y, order)
        assert a[0] != "0" and b[0] != "0" and c[0] != "0"  # no leading zeros anywhere
        assert int(c) == int(a) + int(b)
        operands.append((a, b))
    return operands


@pytest.mark.parametrize("order", ORDERS)
def test_labels_are_the_sum(order: str) -> None:
    task = tasks.build("addition", {"digits": order})
    for length in [*range(1, 8), 10, 20, 25]:
        batch = task.sample(32, length, gen(length), "test")
        assert batch.inputs.shape == (32, task.tokens(length)) and batch.positions is None
        assert all(len(a) == len(b) == length for a, b in check(batch, order))  # both operands exactly n digits
    for seed in range(3):
        batch = task.sample_train(64, gen(seed))
        assert all(1 <= len(a) <= 5 and 1 <= len(b) <= 5 for a, b in check(batch, order))


def test_worked_examples() -> None:
    # 57 + 68 = 125 in the three orders of the module docstring
    expected = {"reversed": [7, 5, PLUS, 8, 6, SEP, 5, 2, 1], "reversed_sum": [5, 7, PLUS, 6, 8, SEP, 5, 2, 1],
                "plain": [5, 7, PLUS, 6, 8, SEP, 1, 2, 5]}  # fmt: skip
    for order, x in expected.items():
        batch = tasks.build("addition", {"digits": order}).layout([(57, 68)], 9)
        assert batch.inputs.tolist()[0] == x[:9]
        assert [v for v in batch.targets.tolist()[0] if v != IGNORE] == x[6:] + [END]


def test_training_draws_every_pair_of_operand_lengths_equally() -> None:
    task = tasks.build("addition", {"train_max": 5})
    pairs: Counter = Counter()
    for seed in range(40):
        pairs.update((len(a), len(b)) for a, b in check(task.sample_train(64, gen(seed)), "reversed"))
    assert set(pairs) == {(i, j) for i in range(1, 6) for j in range(1, 6)}
    n = sum(pairs.values())
    assert max(abs(c / n - 1 / 25) for c in pairs.values()) < 0.015
    widths = {task.sample_train(64, gen(s)).inputs.shape[1] for s in range(5)}
    assert max(widths) <= task.tokens(5)


def test_carries_are_frequent() -> None:
    # unlike add_nocarry, most sums carry: at 5 digits about 1 - 0.55^5 = 0.95 of the pairs have a carry
    batch = tasks.build("addition", {"train_max": 5}).sample(2000, 5, gen(4))
    ops = check(batch, "reversed")
    carry = sum(any(int(p) + int(q) >= 10 for p, q in zip(a[::-1], b[::-1], strict=True)) for a, b in ops)
    assert carry / 2000 > 0.9
    # the sum gains a digit: leading digits (1-9 each) summing to 10 or more (45 of 81 pairs), or to 9 with a carry
    # in (8 of 81, times about 1/2): about 0.60
    long = sum(len(str(int(a) + int(b))) == 6 for a, b in ops) / 2000
    assert 0.56 < long < 0.65


def test_declarations() -> None:
    from pebench.engine.settings import Settings

    task = tasks.build("addition", {"train_max": 5})
    assert task.train_range == (1, 5) and task.train_length == 5
    assert task.eval_lengths("quick") == [5, 6, 10, 20, 25] and task.eval_lengths("full") == list(range(1, 26))
    assert task.tokens(5) == 18 and task.max_length() == 78 and task.vocab_size == 14
    assert task.metric == "exact_match" and task.higher_is_better
    assert "2405.17399" in task.paper and "2405.20671" in task.paper
    assert task.chance_level == pytest.approx(1 / 179_999)  # sums of two 5-digit numbers: 20000 .. 199998
    assert tasks.build("addition", {"train_max": 1}).chance_level == pytest.approx(1 / 17)  # 2 .. 18
    default = tasks.build("addition")  # version 2: 1-3 digits, 2400 steps (docs/defaults.md)
    assert default.version == "2" and default.train_range == (1, 3)
    assert default.eval_lengths("quick") == [3, 4, 6, 12, 15] and Settings().train_config(default).steps == 2400
    assert default.config()["options"] == {"train_max": 3, "digits": "reversed"}
    mcleish = tasks.build("addition", {"train_max": 20})  # the paper's protocol: 1-20 digits, OOD to 100
    assert mcleish.train_range == (1, 20) and mcleish.eval_lengths("quick") == [20, 21, 40, 80, 100]
    assert mcleish.eval_lengths("full") == list(range(1, 101))


def test_bad_input() -> None:
    with pytest.raises(OptionError, match="digits"):
        tasks.build("addition", {"digits": "backwards"})
    with pytest.raises(OptionError, match="train_max"):
        tasks.build("addition", {"train_max": 0})
    with pytest.raises(LengthError, match=">= 1"):
        tasks.build("addition").sample(2, 0, gen())
    with pytest.raises(ValueError, match="valid splits"):
        tasks.build("addition").sample(2, 3, gen(), "nope")


def test_deterministic_in_the_generator() -> None:
    task = tasks.build("addition")
    random.seed(1)
    state = random.getstate()
    a, b, c = (task.sample(32, 12, gen(s)) for s in (5, 5, 6))
    assert torch.equal(a.inputs, b.inputs) and torch.equal(a.targets, b.targets) and not torch.equal(a.inputs, c.inputs)
    t1, t2 = task.sample_train(32, gen(3)), task.sample_train(32, gen(3))
    assert torch.equal(t1.inputs, t2.inputs) and torch.equal(t1.targets, t2.targets)
    assert random.getstate() == state
