"""The Chomsky-hierarchy tasks of issue 15 (Delétang et al. 2023, arXiv:2207.02098): every label against a
brute-force reference written here from the paper's definition (Python's eval, a simulated stack, int(x, 2) * int(y, 2),
math.isqrt), the paper's examples, balance, declarations, determinism and bad input."""

from __future__ import annotations

import math
import random
import re
from collections import Counter

import pytest
import torch

from pebench import tasks
from pebench.errors import LengthError, OptionError
from pebench.tasks import IGNORE, Task
from pebench.tasks.modular_arithmetic_brackets import random_expression

NEW = [
    "even_pairs", "modular_arithmetic_brackets", "stack_manipulation", "solve_equation", "missing_duplicate_string",
    "odds_first", "binary_multiplication", "compute_sqrt", "reverse_string",
]  # fmt: skip
SHORTEST = {"missing_duplicate_string": 2, "solve_equation": 3, "binary_multiplication": 3}
"""The shortest length holding an instance (the paper's generators return a constant placeholder below it)."""


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def bits(s: list[int]) -> str:
    return "".join(map(str, s))


# -- brute-force references: the answer from the prompt, independently of the generators ---------------------------

ARITH = {5: "+", 6: "-", 7: "*", 8: "(", 9: ")"}


def ref_even_pairs(p: list[int]) -> list[int]:
    assert set(p) <= {0, 1}
    return [len(re.findall("(?=01|10)", bits(p))) % 2]  # overlapping occurrences of ab and ba


def ref_odds_first(p: list[int]) -> list[int]:
    odd = [p[i - 1] for i in range(1, len(p) + 1) if i % 2 == 1]  # positions counted from 1, as in the paper
    even = [p[i - 1] for i in range(1, len(p) + 1) if i % 2 == 0]
    return odd + even


def ref_missing_duplicate(p: list[int]) -> list[int]:
    n = len(p)
    assert p.count(2) == 1 and (p[-1] == 3) == (n % 2 == 1) and p.count(3) == n % 2
    body = p[: n - n % 2]
    fits = [b for b in (0, 1) if (s := bits(body).replace("2", str(b)))[: n // 2] == s[n // 2 :]]
    assert len(fits) == 1
    return fits


def ref_stack(p: list[int]) -> list[int]:
    k = next((i for i, v in enumerate(p) if v >= 2), len(p))
    stack, actions = bits(p[:k]), p[k:]
    assert stack and set(actions) <= {2, 3, 4} and bool(actions) == (len(p) > 1)  # n = 1: one bit, no action
    for a in actions:
        stack = stack[:-1] if a == 2 else stack + str(a - 3)
    return [int(c) for c in reversed(stack)] + [5]


def ref_multiply(p: list[int]) -> list[int]:
    x, y = bits(p).split("2")
    assert x and y and "1" in x and "1" in y
    product = int(x[::-1], 2) * int(y[::-1], 2)
    return [int(c) for c in reversed(bin(product)[2:])] + [3]


def ref_sqrt(p: list[int]) -> list[int]:
    v = int(bits(p), 2)
    assert v >= 1
    return [int(c) for c in format(math.isqrt(v), f"0{math.ceil(len(p) / 2)}b")]


def ref_brackets(p: list[int]) -> list[int]:
    text = "".join(ARITH.get(v, str(v)) for v in p)
    assert all(v <= 9 for v in p)
    return [eval(text) % 5]  # every binary operation is bracketed; Python's unary minus is the paper's negation


def ref_solve(p: list[int]) -> list[int]:
    assert p.count(10) == 1 and p[-2] == 11 and 7 not in p  # one x, "=", then the value; no product
    lhs = "".join({10: "x", **ARITH}.get(v, str(v)) for v in p[:-2])
    solutions = [x for x in range(5) if eval(lhs.replace("x", f"({x})")) % 5 == p[-1]]
    assert len(solutions) == 1  # linear: the coefficient of x is +-1
    return solutions


REFS = {  # name: (SEP, PAD, reference)
    "even_pairs": (2, 3, ref_even_pairs),
    "odds_first": (2, 3, ref_odds_first),
    "reverse_string": (2, 3, lambda p: p[::-1]),
    "missing_duplicate_string": (4, 5, ref_missing_duplicate),
    "stack_manipulation": (6, 7, ref_stack),
    "binary_multiplication": (4, 5, ref_multiply),
    "compute_sqrt": (2, 3, ref_sqrt),
    "modular_arithmetic_brackets": (10, 11, ref_brackets),
    "solve_equation": (12, 13, ref_solve),
}


def expected_targets(x: list[int], sep: int, pad: int, solve) -> list[int]:
    """Layout ``prompt SEP answer[:-1] PAD*`` with only the answer scored."""
    k = x.index(sep)
    answer = solve(x[:k])
    end = k + len(answer)
    assert x[k + 1 : end] == answer[:-1] and all(v == pad for v in x[end:])
    return [IGNORE] * k + answer + [IGNORE] * (len(x) - end)


def check(task: Task, batch) -> None:
    sep, pad, solve = REFS[task.name]
    assert batch.inputs.dtype == torch.int64 and batch.inputs.shape == batch.targets.shape
    assert int(batch.inputs.min()) >= 0 and int(batch.inputs.max()) < task.vocab_size and batch.positions is None
    for x, y in zip(batch.inputs.tolist(), batch.targets.tolist(), strict=True):
        assert y == expected_targets(x, sep, pad, solve)


@pytest.mark.parametrize("name", NEW)
def test_labels_match_brute_force(name: str) -> None:
    task = tasks.build(name)
    lo = SHORTEST.get(name, 1)
    assert task.min_length == lo
    for length in sorted({*range(lo, lo + 8), 40, 80, 160}):
        batch = task.sample(24, length, gen(length), "test")
        assert batch.inputs.shape == (24, task.tokens(length))
        check(task, batch)
    for seed in range(3):  # training batches mix lengths and padding
        check(task, task.sample_train(32, gen(seed)))


@pytest.mark.parametrize("name", NEW)
def test_training_covers_the_whole_length_range(name: str) -> None:
    task = tasks.build(name, {"train_max": 40})  # the papers' protocol
    lo = SHORTEST.get(name, 1)
    assert task.train_range == (lo, 40)
    seen: set[int] = set()
    for seed in range(20):
        batch = task.sample_train(64, gen(seed))
        seen |= set((batch.targets != IGNORE).int().argmax(dim=1).tolist())  # the prompt's length
        assert batch.inputs.shape[1] <= task.tokens(40)
    assert seen == set(range(lo, 41))


DEFAULTS = {"even_pairs": (10, 1200), "odds_first": (10, 1200), "binary_multiplication": (10, 1200),
            "compute_sqrt": (10, 1200), "reverse_string": (10, 1200), "stack_manipulation": (10, 1200),
            "modular_arithmetic_brackets": (6, 2400), "solve_equation": (6, 2400),
            "missing_duplicate_string": (8, 2400)}  # fmt: skip
"""Version 2 defaults (training maximum, steps): a core encoding learns each task (docs/defaults.md)."""


@pytest.mark.parametrize("name", NEW)
def test_version_2_defaults(name: str) -> None:
    task = tasks.build(name)
    m, steps = DEFAULTS[name]
    assert task.version == "2" and task.default_steps == steps
    assert task.train_range == (SHORTEST.get(name, 1), m) and task.eval_lengths("quick") == [m, 2 * m, 4 * m]
    assert "papers: " in task.description and task.options["train_max"].default == m


@pytest.mark.parametrize("name", NEW)
def test_declarations(name: str) -> None:
    task = tasks.build(name, {"train_max": 40})  # the papers' protocol, one option away
    assert task.description and "2207.02098" in task.paper
    assert task.metric == "accuracy" and task.higher_is_better
    assert task.eval_lengths("quick") == [40, 80, 160] and task.eval_lengths("full") == list(range(40, 501))
    chance = {"modular_arithmetic_brackets": 0.2, "solve_equation": 0.2, "stack_manipulation": 1 / 3,
              "binary_multiplication": 1 / 3}.get(name, 0.5)  # fmt: skip
    assert task.chance_level == pytest.approx(chance)
    vocab = {"modular_arithmetic_brackets": 12, "solve_equation": 14, "stack_manipulation": 8,
             "missing_duplicate_string": 6, "binary_multiplication": 6}.get(name, 4)  # fmt: skip
    assert task.vocab_size == vocab
    # train_max moves training and evaluation as in every Chomsky task
    short = tasks.build(name, {"train_max": 8})
    assert short.train_range == (SHORTEST.get(name, 1), 8) and short.eval_lengths("quick") == [8, 16, 32]
    assert max(short.sample_train(64, gen(seed)).inputs.shape[1] for seed in range(4)) <= short.tokens(8)
    with pytest.raises(OptionError, match="train_max"):
        tasks.build(name, {"train_max": 0})
    with pytest.raises(OptionError, match="bogus"):
        tasks.build(name, {"bogus": 1})


def test_token_counts() -> None:
    tokens = {n: tasks.build(n, {"train_max": 40}).tokens(40) for n in NEW}
    assert tokens == {
        "even_pairs": 41, "modular_arithmetic_brackets": 41, "stack_manipulation": 81, "solve_equation": 41,
        "missing_duplicate_string": 41, "odds_first": 80, "binary_multiplication": 80, "compute_sqrt": 60,
        "reverse_string": 80,
    }  # fmt: skip
    assert tasks.build("compute_sqrt").tokens(7) == 11
    assert tasks.build("stack_manipulation", {"train_max": 40}).max_length() == 1001


@pytest.mark.parametrize("name", NEW)
def test_deterministic_in_the_generator(name: str) -> None:
    task = tasks.build(name)
    random.seed(1)
    torch.manual_seed(1)
    py_state, torch_state = random.getstate(), torch.get_rng_state()
    a, b, c = (task.sample(32, 24, gen(s), "test") for s in (5, 5, 6))
    assert torch.equal(a.inputs, b.inputs) and torch.equal(a.targets, b.targets)
    assert not torch.equal(a.inputs, c.inputs)
    t1, t2 = task.sample_train(32, gen(3)), task.sample_train(32, gen(3))
    assert torch.equal(t1.inputs, t2.inputs) and torch.equal(t1.targets, t2.targets)
    assert random.getstate() == py_state and torch.equal(torch.get_rng_state(), torch_state)  # global RNGs untouched


@pytest.mark.parametrize("name", sorted(SHORTEST))
def test_lengths_without_an_instance(name: str) -> None:
    lo = SHORTEST[name]
    with pytest.raises(LengthError, match=f">= {lo}"):
        tasks.build(name).sample(2, lo - 1, gen())
    with pytest.raises(OptionError, match=f"below its shortest length {lo}"):
        tasks.build(name, {"train_max": lo - 1})


# -- the papers' examples ---------------------------------------------------------------------------------------------


def test_paper_examples() -> None:
    # even pairs: 001110 has one 10 and one 01 -> class 0; 0101001 has 2 + 3 -> class 1
    assert ref_even_pairs([0, 0, 1, 1, 1, 0]) == [0] and ref_even_pairs([0, 1, 0, 1, 0, 0, 1]) == [1]
    # odds first: 00110101 -> 0100 0111; 110 -> 10 1
    assert ref_odds_first([0, 0, 1, 1, 0, 1, 0, 1]) == [0, 1, 0, 0, 0, 1, 1, 1]
    assert ref_odds_first([1, 1, 0]) == [1, 0, 1]
    # missing duplicate string: 0110 0?10 -> 1; 101 1?1 (odd: EMPTY) -> 0
    assert ref_missing_duplicate([0, 1, 1, 0, 0, 2, 1, 0]) == [1]
    assert ref_missing_duplicate([1, 0, 1, 1, 2, 1, 3]) == [0]
    # stack manipulation: 0110 PUSH1 POP POP -> 110 END; 110 POP POP POP -> END (POP 2, PUSH0 3, PUSH1 4, END 5)
    assert ref_stack([0, 1, 1, 0, 4, 2, 2]) == [1, 1, 0, 5] and ref_stack([1, 1, 0, 2, 2, 2]) == [5]
    # binary multiplication (little-endian): 001 * 01101 = 0001101 (4 * 22 = 88); 1001 * 000001 = 000001001 (288)
    assert ref_multiply([0, 0, 1, 2, 0, 1, 1, 0, 1]) == [0, 0, 0, 1, 1, 0, 1, 3]
    assert ref_multiply([1, 0, 0, 1, 2, 0, 0, 0, 0, 0, 1]) == [0, 0, 0, 0, 0, 1, 0, 0, 1, 3]
    # compute sqrt: 100101 (37) -> 110 (6); 111 (7) -> 10 (2)
    assert ref_sqrt([1, 0, 0, 1, 0, 1]) == [1, 1, 0] and ref_sqrt([1, 1, 1]) == [1, 0]
    # the docstrings' worked examples: ((2 * -3) - (4 + 1)) = 4; ((x - 3) + -1) = 2 -> x = 1
    assert ref_brackets([8, 8, 2, 7, 6, 3, 9, 6, 8, 4, 5, 1, 9, 9]) == [4]
    assert ref_solve([8, 8, 10, 6, 3, 9, 5, 6, 1, 9, 11, 2]) == [1]
    # and the generators produce them: every sample of the examples' length and shape has the stated answer
    batch = tasks.build("stack_manipulation").sample(20_000, 7, gen(2))
    example = [0, 1, 1, 0, 4, 2, 2]
    hits = [y for x, y in zip(batch.inputs.tolist(), batch.targets.tolist(), strict=True) if x[:7] == example]
    assert hits and all([v for v in y if v != IGNORE] == [1, 1, 0, 5] for y in hits)


def test_expression_grammar() -> None:
    """The recursive grammar of the paper: E(1) = d, E(2) = -d, E(3) = (d), E(4) = (-d), E(n) = (E op E)."""
    rng = random.Random(0)
    shapes = {n: {tuple("d" if v < 5 else ARITH[v] for v in random_expression(n, rng, (5, 6, 7))[0])
                  for _ in range(200)} for n in range(1, 7)}  # fmt: skip
    assert shapes[1] == {("d",)} and shapes[2] == {("-", "d")} and shapes[3] == {("(", "d", ")")}
    assert shapes[4] == {("(", "-", "d", ")")}
    assert shapes[5] == {("(", "d", op, "d", ")") for op in "+-*"}
    assert shapes[6] == {s for op in "+-*" for s in [("(", "d", op, "-", "d", ")"), ("(", "-", "d", op, "d", ")")]}
    for n in (40, 500, 20_000):  # any length, no recursion limit; the value is the expression's
        tokens, value = random_expression(n, rng, (5, 6, 7))
        assert len(tokens) == n and tokens.count(8) == tokens.count(9)
        if n <= 500:
            assert ref_brackets(tokens) == [value]


# -- balance ---------------------------------------------------------------------------------------------------------


def answers(name: str, length: int, n: int = 4000) -> Counter:
    batch = tasks.build(name).sample(n, length, gen(7), "test")
    return Counter(batch.targets[batch.targets != IGNORE].tolist())


@pytest.mark.parametrize("name", ["even_pairs", "missing_duplicate_string"])
def test_binary_answers_balanced(name: str) -> None:
    for length in (2, 3, 40, 160):
        assert abs(answers(name, length)[1] / 4000 - 0.5) < 0.03
    if name == "even_pairs":
        assert answers(name, 1) == Counter({0: 4000})  # one symbol, no pair


def test_solve_equation_answers_uniform() -> None:
    for length in (3, 40, 160):
        counts = answers("solve_equation", length)
        assert sorted(counts) == list(range(5)) and max(abs(c / 4000 - 0.2) for c in counts.values()) < 0.03


def test_brackets_answers_skew_to_zero() -> None:
    # products are 0 whenever a factor is: at lengths 40-160 about 0.3 of the answers are 0, the rest near 0.175
    for length in (40, 160):
        counts = answers("modular_arithmetic_brackets", length)
        assert 0.25 < counts[0] / 4000 < 0.35 and all(0.14 < counts[r] / 4000 < 0.21 for r in range(1, 5))
    assert max(abs(c / 4000 - 0.2) for c in answers("modular_arithmetic_brackets", 1).values()) < 0.03


def test_stack_sizes_and_output_symbols() -> None:
    task = tasks.build("stack_manipulation")
    batch = task.sample(4000, 40, gen(3))
    sizes = Counter(next(i for i, v in enumerate(x) if v >= 2) for x in batch.inputs.tolist())
    assert set(sizes) == set(range(1, 40))  # the initial stack's size is uniform over 1 .. n - 1
    symbols = Counter(batch.targets[batch.targets != IGNORE].tolist())
    assert sorted(symbols) == [0, 1, 5] and symbols[5] == 4000  # one END per sequence
