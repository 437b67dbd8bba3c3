"""The task families (algorithmic, Chomsky hierarchy, template, retrieval, lm): every generator against a
brute-force reference (labels, scored region == answer region), balance, held-out sets, declarations, bad input."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import pytest
import torch

from pebench import tasks
from pebench.errors import LengthError, OptionError
from pebench.tasks import IGNORE, Task
from pebench.tasks.binary_addition import END
from pebench.tasks.modular_arithmetic import evaluate_expressions

ALGORITHMIC = ["copy", "reverse", "sort", "add_nocarry"]
CHOMSKY = ["parity", "cycle_navigation", "modular_arithmetic", "duplicate_string", "binary_addition", "bucket_sort"]
OTHERS = ["template", "assoc_recall", "passkey", "needle"]
SYNTHETIC = ALGORITHMIC + CHOMSKY + OTHERS


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def split_at(x: list[int], token: int) -> tuple[list[int], list[int]]:
    i = x.index(token)
    return x[:i], x[i + 1 :]


# -- brute-force references: from one sequence's inputs, the expected targets (pure Python) -------------------


def ref_prompt_answer(x: list[int], sep: int, pad: int, solve) -> list[int]:
    """Layout ``prompt SEP answer[:-1] PAD*`` with only the answer scored; ``solve(prompt)`` gives the answer."""
    prompt, _ = split_at(x, sep)
    answer = solve(prompt)
    n_real = len(prompt) + len(answer)
    assert x[len(prompt) + 1 : n_real] == answer[:-1]
    assert all(v == pad for v in x[n_real:])
    return [IGNORE] * len(prompt) + answer + [IGNORE] * (len(x) - n_real)


def ref_modular_value(prompt: list[int]) -> list[int]:
    text = "".join({5: "+", 6: "-", 7: "*"}.get(v, str(v)) for v in prompt)
    assert len(prompt) % 2 == 1
    return [eval(text) % 5]  # Python's own precedence and integers


def ref_binary_sum(prompt: list[int]) -> list[int]:
    plus = prompt.index(2)
    x, y = prompt[:plus], prompt[plus + 1 :]
    assert x and y and any(x) and any(y) and set(x + y) <= {0, 1}
    total = int("".join(map(str, reversed(x))), 2) + int("".join(map(str, reversed(y))), 2)
    return [int(c) for c in reversed(bin(total)[2:])] + [END]


def ref_add(prompt: list[int]) -> list[int]:
    a, b = split_at(prompt, 10)
    assert len(a) == len(b) and all(p + q < 10 for p, q in zip(a, b, strict=True))
    return [p + q for p, q in zip(a, b, strict=True)]


def ref_sort_unique(prompt: list[int]) -> list[int]:
    assert len(set(prompt)) == len(prompt)
    return sorted(prompt)


REFS = {
    "copy": (32, 33, lambda p: list(p)),
    "reverse": (32, 33, lambda p: p[::-1]),
    "sort": (32, 33, ref_sort_unique),
    "add_nocarry": (11, 12, ref_add),
    "parity": (2, 3, lambda p: [sum(p) % 2]),
    "cycle_navigation": (5, 6, lambda p: [sum(a - 1 for a in p) % 5]),
    "modular_arithmetic": (8, 9, ref_modular_value),
    "duplicate_string": (2, 3, lambda p: p + p),
    "binary_addition": (4, 5, ref_binary_sum),
    "bucket_sort": (5, 6, lambda p: sorted(p)),
}


def ref_template(x: list[int], m: int = 100) -> list[int]:
    bos, mid, end, pad = m, m + 1, m + 2, m + 3
    assert x[0] == bos
    before, rest = split_at(x[1:], mid)
    after, tail = split_at(rest, end)
    terms = before + after
    assert set(tail) <= {pad} and len(before) == len(terms) // 2 >= 2
    a, d = terms[0], (terms[1] - terms[0]) % m
    assert d != 0 and terms == [(a + i * d) % m for i in range(len(terms))]
    k, n = len(before), len(terms)
    out = [IGNORE] * len(x)
    for t in range(k + 1, n + 2):  # MID .. last term: the next token
        out[t] = x[t + 1]
    assert out[n + 1] == end
    return out


def ref_assoc(x: list[int], p: int = 8, k: int = 64) -> list[int]:
    kv = x[: 2 * p]
    table = dict(zip(kv[0::2], kv[1::2], strict=True))
    assert len(table) == p and all(key < k for key in table) and all(k <= v < k + 64 for v in table.values())
    out = [IGNORE] * (2 * p) + [table.get(v, IGNORE) for v in x[2 * p :]]
    queried = [v for v in x[2 * p :] if v != k + 64]
    assert sorted(queried) == sorted(table)  # every key queried exactly once, nothing else in the query section
    return out


def ref_haystack(x: list[int], mark: int, ask: int) -> tuple[list[int], int]:
    """Expected targets and the insertion point p (filler tokens before the key statement)."""
    assert x.count(mark) == 1 and x[-5] == ask and ask not in x[:-5]
    p = x.index(mark)
    digits = x[p + 1 : p + 6]
    assert all(0 <= d <= 9 for d in digits) and x[p + 6] == 10
    assert x[-4:] == digits[:4]
    filler = x[:p] + x[p + 7 : -5]
    assert all(v == 10 or v >= 15 for v in filler)
    return [IGNORE] * (len(x) - 5) + digits, p


def reference(task: Task, x: list[int], split: str) -> list[int]:
    if task.name in REFS:
        sep, pad, solve = REFS[task.name]
        return ref_prompt_answer(x, sep, pad, solve)
    if task.name == "template":
        return ref_template(x)
    if task.name == "assoc_recall":
        return ref_assoc(x)
    if task.name in ("passkey", "needle"):
        mark, ask = (11, 13) if task.name == "passkey" else (12, 14)
        return ref_haystack(x, mark, ask)[0]
    raise AssertionError(task.name)


def check_against_reference(task: Task, batch, split: str) -> None:
    assert batch.inputs.dtype == torch.int64 and batch.inputs.shape == batch.targets.shape
    assert int(batch.inputs.min()) >= 0 and int(batch.inputs.max()) < task.vocab_size
    for x, y in zip(batch.inputs.tolist(), batch.targets.tolist(), strict=True):
        assert y == reference(task, x, split)


@pytest.mark.parametrize("name", SYNTHETIC)
def test_labels_match_brute_force(name: str) -> None:
    task = tasks.build(name)
    lengths = sorted({task.min_length, *task.eval_lengths("quick")})
    for split in ("train", *task.eval_splits):
        for length in lengths:
            batch = task.sample(16, length, gen(length), split)
            assert batch.inputs.shape == (16, task.tokens(length))
            check_against_reference(task, batch, split)
    for seed in range(3):  # training batches mix lengths and padding
        check_against_reference(task, task.sample_train(32, gen(seed)), "train")


@pytest.mark.parametrize("name", ALGORITHMIC + CHOMSKY)
def test_training_covers_the_whole_length_range(name: str) -> None:
    task = tasks.build(name)
    lo, hi = task.train_range
    seen: set[int] = set()
    for seed in range(20):
        batch = task.sample_train(64, gen(seed))
        scored_first = (batch.targets != IGNORE).int().argmax(dim=1)  # position of SEP-predicted token
        seen |= set(scored_first.tolist())
    # the scored region starts right after the prompt, whose length is fixed by the task length
    prompt_length = {"add_nocarry": lambda n: 2 * n + 1, "modular_arithmetic": lambda n: n - (n % 2 == 0)}.get(
        name, lambda n: n
    )
    assert seen == {prompt_length(n) for n in range(lo, hi + 1)}


# -- formulas from the papers, written out --------------------------------------------------------------------


def test_modular_arithmetic_paper_examples() -> None:
    # Delétang et al. 2023: 1 + 2 * 3 = 2, 1 - 1 - 1 = 4, 0 * 1 + 4 * 3 - 2 = 0 (mod 5); + = 5, - = 6, * = 7
    expr = [[1, 5, 2, 7, 3, 5, 0, 5, 0], [1, 6, 1, 6, 1, 5, 0, 5, 0], [0, 7, 1, 5, 4, 7, 3, 6, 2]]
    assert evaluate_expressions(torch.tensor(expr)).tolist() == [2, 4, 0]


def test_binary_addition_paper_example() -> None:
    # 001 + 01101 (4 + 22, little-endian) = 26 = 01011 then END
    assert ref_binary_sum([0, 0, 1, 2, 0, 1, 1, 0, 1]) == [0, 1, 0, 1, 1, END]
    task = tasks.build("binary_addition")
    batch = task.sample(200, 9, gen(1))
    for x, y in zip(batch.inputs.tolist(), batch.targets.tolist(), strict=True):
        if x[:9] == [0, 0, 1, 2, 0, 1, 1, 0, 1]:
            assert [v for v in y if v != IGNORE] == [0, 1, 0, 1, 1, END]


def test_cycle_navigation_paper_examples() -> None:
    # Delétang et al.: moves +1 -1 0 -1 -1 end in state 3; +1 +1 +1 -1 in state 2 (token = move + 1)
    task = tasks.build("cycle_navigation")
    batch = task.sample(4000, 4, gen(2))
    hits = {(2, 2, 2, 0): 2}
    for x, y in zip(batch.inputs.tolist(), batch.targets.tolist(), strict=True):
        if tuple(x[:4]) in hits:
            assert y[4] == hits[tuple(x[:4])]
    assert REFS["cycle_navigation"][2]([2, 0, 1, 0, 0]) == [3]


def test_worked_layouts() -> None:
    assert tasks.build("reverse").tokens(8) == 16 and tasks.build("add_nocarry").tokens(5) == 16
    assert tasks.build("duplicate_string").tokens(40) == 120 and tasks.build("parity").tokens(40) == 41
    assert tasks.build("modular_arithmetic").tokens(40) == 40 and tasks.build("modular_arithmetic").tokens(41) == 42
    assert tasks.build("binary_addition").tokens(40) == 80


# -- balance and chance ---------------------------------------------------------------------------------------


def answers(task: Task, length: int, n: int = 4000, split: str = "test") -> list[int]:
    batch = task.sample(n, length, gen(7), split)
    return batch.targets[batch.targets != IGNORE].tolist()


def test_parity_balanced() -> None:
    task = tasks.build("parity")
    assert task.chance_level == 0.5
    for length in (1, 2, 40, 160):
        counts = Counter(answers(task, length))
        assert abs(counts[1] / 4000 - 0.5) < 0.03


@pytest.mark.parametrize(("name", "classes"), [("cycle_navigation", 5), ("modular_arithmetic", 5), ("bucket_sort", 5)])
def test_five_class_chomsky_tasks_near_uniform(name: str, classes: int) -> None:
    task = tasks.build(name)
    assert task.chance_level == pytest.approx(0.2)
    counts = Counter(answers(task, 40))
    assert sorted(counts) == list(range(classes))
    assert max(abs(c / sum(counts.values()) - 0.2) for c in counts.values()) < 0.03


def test_chance_levels() -> None:
    expected = {
        "copy": 32.0**-12, "reverse": 32.0**-8, "sort": 1 / (32 * 31 * 30 * 29 * 28 * 27), "add_nocarry": 1e-5,
        "duplicate_string": 0.5, "binary_addition": 1 / 3, "template": 1 / 101, "assoc_recall": 1 / 64,
        "passkey": 1e-5, "needle": 1e-5, "lm": 256.0,
    }  # fmt: skip
    for name, chance in expected.items():
        assert tasks.build(name).chance_level == pytest.approx(chance, rel=1e-9), name


def test_assoc_recall_values_and_query_positions_uniform() -> None:
    task = tasks.build("assoc_recall")
    batch = task.sample(2000, 64, gen(3))
    values = Counter(answers(task, 64))
    assert sorted(values) == list(range(64, 128))
    assert max(values.values()) / min(values.values()) < 1.5
    q = (batch.targets != IGNORE).nonzero()[:, 1]
    assert int(q.min()) == 16 and int(q.max()) == 63  # the whole query section is used


def test_assoc_recall_train_length_option() -> None:
    task = tasks.build("assoc_recall")  # version 2: training length 32 (docs/defaults.md); version 1 trained at 64
    assert task.version == "2" and task.eval_lengths("quick") == [32, 64, 128]
    assert task.sample_train(4, gen()).inputs.shape == (4, 32)
    v1 = tasks.build("assoc_recall", {"train_length": 64})
    assert v1.eval_lengths("quick") == [64, 128, 256] and v1.train_range == (64, 64)


@pytest.mark.parametrize("name", ["passkey", "needle"])
def test_haystack_depths_and_digits(name: str) -> None:
    task = tasks.build(name)
    mark, ask = (11, 13) if name == "passkey" else (12, 14)
    assert task.eval_splits == ("uniform", "depth0.00", "depth0.25", "depth0.50", "depth0.75", "depth1.00")
    for length in (64, 256):
        f = length - 12
        for depth in (0.0, 0.25, 0.5, 0.75, 1.0):
            batch = task.sample(8, length, gen(4), f"depth{depth:.2f}")
            for x in batch.inputs.tolist():
                assert ref_haystack(x, mark, ask)[1] == round(depth * f)
    uniform = [ref_haystack(x, mark, ask)[1] for x in task.sample(2000, 64, gen(5), "uniform").inputs.tolist()]
    assert min(uniform) == 0 and max(uniform) == 52
    digits = Counter(answers(task, 64, split="uniform"))
    assert sorted(digits) == list(range(10)) and max(abs(c / 20000 - 0.1) for c in digits.values()) < 0.01


def test_passkey_filler_repeats_and_needle_filler_varies() -> None:
    p = tasks.build("passkey").filler(4, 96, gen(0))
    assert torch.equal(p[:, :72], p[:, 24:96])  # period 24
    n = tasks.build("needle").filler(200, 96, gen(0))
    for row in n.tolist():
        sentences = " ".join(map(str, row)).split(" 10")[1:-1]  # whole sentences between two DOTs
        assert sentences and all(3 <= len(s.split()) <= 8 for s in sentences)
    assert len({tuple(r) for r in n.tolist()}) == 200


# -- held-out data --------------------------------------------------------------------------------------------


def test_template_test_sequences_never_in_training() -> None:
    task = tasks.build("template")
    train = {tuple(p) for p in task.train_pairs.tolist()}
    test = {tuple(p) for p in task.test_pairs.tolist()}
    assert not train & test and len(train) + len(test) == 100 * 99 and len(test) == 1980

    def seqs(split: str, seed: int, length: int) -> set[tuple[int, ...]]:
        x = task.sample(3000, length, gen(seed), split).inputs
        return {tuple(r) for r in x.tolist()}

    train_seqs = seqs("train", 1, 32)
    train_seqs |= {tuple(r) for s in range(20) for r in task.sample_train(64, gen(s)).inputs.tolist()}
    assert not train_seqs & seqs("test", 2, 32)
    # and the (start, step) of every test sequence is a held-out pair
    for x in task.sample(500, 64, gen(3), "test").inputs.tolist():
        assert (x[1], (x[2] - x[1]) % 100) in test
    # sequences at 2L are all longer than any at L
    lens = lambda b: (b.inputs == 102).int().argmax(dim=1)  # noqa: E731  (position of END)
    assert int(lens(task.sample(500, 64, gen(4), "test")).min()) > int(lens(task.sample(500, 32, gen(5))).max())


# -- declarations ---------------------------------------------------------------------------------------------


CHOMSKY_DEFAULT_MAX = {"parity": 8, "modular_arithmetic": 6, "binary_addition": 16}
"""Chomsky tasks whose default training maximum (version 2) is below the papers' 40 so the default model learns them
in distribution (docs/defaults.md)."""


def test_declared_lengths() -> None:
    q = {n: tasks.build(n).eval_lengths("quick") for n in ALGORITHMIC}
    assert q == {"copy": [12, 13, 20, 24, 48], "reverse": [8, 9, 16, 32], "sort": [6, 7, 10, 12, 24],
                 "add_nocarry": [5, 6, 8, 10, 20]}  # fmt: skip
    assert tasks.build("reverse").eval_lengths("full") == [*range(3, 17), 32]
    assert {n: tasks.build(n).train_range for n in ALGORITHMIC} == {
        "copy": (4, 12), "reverse": (3, 8), "sort": (3, 6), "add_nocarry": (2, 5)}  # fmt: skip
    for name in CHOMSKY:
        m = CHOMSKY_DEFAULT_MAX.get(name, 40)
        task = tasks.build(name)
        assert task.eval_lengths("quick") == [m, 2 * m, 4 * m]
        assert task.eval_lengths("full") == [m, *range(m + 1, 501)]
        assert task.train_range == ((3, m) if name == "binary_addition" else (1, m))
        assert task.metric == "accuracy" and task.higher_is_better
        # the papers' protocol (Delétang et al. 2023: train 1..40, test 41..500) is one option away
        paper = tasks.build(name, {"train_max": 40})
        assert paper.eval_lengths("quick") == [40, 80, 160]
        assert paper.eval_lengths("full") == [40, *range(41, 501)]  # 41 included
        assert paper.train_range == ((3, 40) if name == "binary_addition" else (1, 40))
    for name in ALGORITHMIC + ["passkey", "needle"]:
        assert tasks.build(name).metric == "exact_match"
    assert tasks.build("template").eval_lengths() == [32, 64, 128]
    assert tasks.build("duplicate_string").max_length() == 1500  # tokens, not task length
    for name in SYNTHETIC + ["lm"]:
        task = tasks.build(name)
        assert task.version and task.description and task.paper


@pytest.mark.parametrize("name", CHOMSKY)
def test_chomsky_train_max_moves_training_and_evaluation_lengths(name: str) -> None:
    task = tasks.build(name, {"train_max": 8})
    lo = 3 if name == "binary_addition" else 1
    assert task.train_range == (lo, 8)
    assert task.eval_lengths("quick") == [8, 16, 32]
    assert task.eval_lengths("full") == list(range(8, 501))
    assert task.config()["options"] == {"train_max": 8}
    # training batches never exceed the new maximum: the widest row is the token count of length 8
    widths = {task.sample_train(64, gen(seed)).inputs.shape[1] for seed in range(5)}
    assert max(widths) <= task.tokens(8)
    assert tasks.build(name, {"train_max": 200}).eval_lengths("full")[-1] == 800  # 4m beyond 500
    with pytest.raises(OptionError, match="train_max"):
        tasks.build(name, {"train_max": 0})
    if name == "binary_addition":  # its shortest length is 3 (x, +, y)
        with pytest.raises(OptionError, match="train_max=2 is below its shortest length 3"):
            tasks.build(name, {"train_max": 2})
    else:
        assert tasks.build(name, {"train_max": 2}).train_range == (1, 2)


# Version 2 (issue 12 item 3): the defaults of the five tasks no core encoding learned, each trained as written here
# from docs/defaults.md, and the source's protocol one option away. Delétang et al. 2023 (arXiv:2207.02098, Sec. 4)
# train every Chomsky task on input lengths 1..40 and test on 41..500; binary_addition's shortest expression is 3
# tokens (x + y), and a modular_arithmetic expression of even length n uses its first n - 1 tokens (odd prompts).
# The seed study trains modular_sum at 32 tokens for 400 steps; template trained for 600 steps (version 1).
VERSION_2 = {  # task: (prompt lengths drawn in training at the defaults, with the papers' train_max=40; steps)
    "parity": (range(1, 9), range(1, 41), 1200),
    "modular_arithmetic": (range(1, 6, 2), range(1, 40, 2), 2400),
    "binary_addition": (range(3, 17), range(3, 41), 1200),
}


def drawn_prompt_lengths(task: Task) -> set[int]:
    """The prompt lengths of 30 training batches: the first scored position is the prompt's length."""
    out: set[int] = set()
    for seed in range(30):
        batch = task.sample_train(64, gen(seed))
        out |= set((batch.targets != IGNORE).int().argmax(dim=1).tolist())
    return out


@pytest.mark.parametrize("name", sorted(VERSION_2))
def test_version_2_defaults_and_the_papers_protocol_one_option_away(name: str) -> None:
    from pebench.engine.settings import Settings

    default, paper, steps = VERSION_2[name]
    task = tasks.build(name)
    assert task.version == "2" and "papers: " in task.description
    assert drawn_prompt_lengths(task) == set(default)
    assert Settings().train_config(task).steps == steps
    papers = tasks.build(name, {"train_max": 40})
    assert drawn_prompt_lengths(papers) == set(paper)
    assert papers.eval_lengths("quick") == [40, 80, 160] and papers.eval_lengths("full") == list(range(40, 501))
    assert "papers' protocol: 40" in type(task).options["train_max"].help


def test_version_2_modular_sum_and_template_defaults() -> None:
    from pebench.engine.settings import Settings

    modular_sum, template = tasks.build("modular_sum"), tasks.build("template")
    assert modular_sum.version == template.version == "2"
    assert modular_sum.sample_train(4, gen()).inputs.shape == (4, 8)
    assert modular_sum.eval_lengths("quick") == [8, 16, 32]
    assert Settings().train_config(modular_sum).steps == 1200 and Settings().train_config(template).steps == 1200
    seed_study = tasks.build("modular_sum", {"train_length": 32})  # the seed study's length (with --steps 400)
    assert seed_study.sample_train(4, gen()).inputs.shape == (4, 32)
    assert seed_study.eval_lengths("quick") == [32, 64, 128]
    assert Settings(steps=400).train_config(seed_study).steps == 400


def test_score_picks_the_declared_metric() -> None:
    m = {"token_accuracy": 0.7, "sequence_accuracy": 0.2, "perplexity": 3.5}
    assert tasks.build("copy").score(m) == 0.2
    assert tasks.build("parity").score(m) == 0.7
    assert tasks.build("lm").score(m) == 3.5


# -- bad input ------------------------------------------------------------------------------------------------


def test_lengths_a_task_cannot_produce() -> None:
    with pytest.raises(LengthError, match="valid lengths: 1..32"):
        tasks.build("sort").sample(2, 33, gen())
    with pytest.raises(LengthError, match=">= 3"):
        tasks.build("binary_addition").sample(2, 2, gen())
    with pytest.raises(LengthError, match=">= 24"):
        tasks.build("assoc_recall").sample(2, 23, gen())
    with pytest.raises(LengthError, match=">= 16"):
        tasks.build("passkey").sample(2, 15, gen())
    with pytest.raises(LengthError, match=">= 7"):
        tasks.build("template").sample(2, 6, gen())
    with pytest.raises(OptionError, match="n_keys"):
        tasks.build("assoc_recall", {"n_pairs": 10, "n_keys": 5})
    with pytest.raises(OptionError, match="valid"):
        tasks.build("sort", {"n_items": 10})


# -- lm -------------------------------------------------------------------------------------------------------


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    words = [f"w{i}" for i in range(50)]
    g = gen(0)
    text = lambda n: " ".join(words[int(i)] for i in torch.randint(0, 50, (n,), generator=g))  # noqa: E731
    (tmp_path / "train.txt").write_text(text(3000))
    (tmp_path / "validation.txt").write_text(text(400))
    return tmp_path


def test_lm_training_windows_come_from_the_training_text(corpus: Path) -> None:
    task = tasks.build("lm", {"corpus": str(corpus), "context": 16})
    train = (corpus / "train.txt").read_bytes()
    batch = task.sample_train(8, gen())
    assert batch.inputs.shape == (8, 16)
    for x, y in zip(batch.inputs.tolist(), batch.targets.tolist(), strict=True):
        assert bytes(x) in train and x[1:] == y[:-1] and bytes(x + y[-1:]) in train
    assert task.eval_lengths("quick") == [16, 32, 64, 128]
    info = task.config()["corpus"]
    assert info["source"] == "directory" and len(info["train_sha256"]) == 64


def test_lm_every_length_scores_the_same_bytes_with_context(corpus: Path) -> None:
    """Sliding windows (version 2's protocol; Press et al.'s one validation set for every length): the labels scored at
    every length are the same stretch of the validation text, each scored once, each with at least T - T//2 tokens of
    context."""
    task = tasks.build("lm", {"corpus": str(corpus), "context": 16, "eval": "sliding"})
    val = (corpus / "validation.txt").read_bytes()
    spans = {}
    for length in (16, 32, 17, 64, 256):
        stride = length // 2
        batches = list(task.eval_batches(length, 10, gen(length), "test", 4))
        inputs = torch.cat([b.inputs for b in batches])
        targets = torch.cat([b.targets for b in batches])
        # consecutive windows overlap by length - stride tokens and are contiguous text
        assert torch.equal(inputs[1:, : length - stride], inputs[:-1, stride:])
        start = val.index(bytes(inputs[0].tolist()))
        labels = []
        for j in range(inputs.shape[0]):
            for t in range(length):
                if targets[j, t] != IGNORE:
                    pos = start + j * stride + t + 1  # the byte this position predicts
                    assert targets[j, t] == val[pos] and t >= length - stride  # never a short context
                    labels.append(pos)
        assert len(labels) == len(set(labels)) == 10 * 8  # n_samples x (L // 2) labels, each once
        assert labels == list(range(labels[0], labels[0] + 80))
        spans[length] = labels
    assert all(v == spans[16] for v in spans.values())  # the same bytes at every length
    assert inputs.shape[0] == -(-80 // 128)  # at 256: one window scores its last 128 positions (80 of them)
    # a huge n_samples is capped by the text; a length longer than the text: one-line error
    a, n = task.scored_span(16, 10_000)
    assert a + n + 128 + 1 <= len(val) and n > 80
    with pytest.raises(LengthError, match="validation text"):
        task.check_length(len(val))


def test_lm_nonoverlapping_windows_tile_the_same_bytes(corpus: Path) -> None:
    """Press et al. 2022 sec. 2.1, nonoverlapping inference: the text is cut into consecutive windows of T tokens,
    each evaluated on its own with every position scored (position t of a window predicts with t tokens of
    context). The labels are the same stretch as with sliding windows, at every length."""
    from pebench.tasks.lm import LanguageModelling

    sliding = tasks.build("lm", {"corpus": str(corpus), "context": 16, "eval": "sliding"})
    task = tasks.build("lm", {"corpus": str(corpus), "context": 16, "eval": "nonoverlapping"})
    val = (corpus / "validation.txt").read_bytes()

    def labels(t: LanguageModelling, length: int) -> list[int]:
        batches = list(t.eval_batches(length, 10, gen(length), "test", 4))
        inputs = torch.cat([b.inputs for b in batches])
        targets = torch.cat([b.targets for b in batches])
        stride = length if t is task else length // 2
        start = val.index(bytes(inputs[0].tolist()))
        out = []
        for j in range(inputs.shape[0]):
            assert bytes(inputs[j].tolist()) == val[start + j * stride : start + j * stride + length]
            for pos in range(length):
                if targets[j, pos] != IGNORE:
                    assert targets[j, pos] == val[start + j * stride + pos + 1]
                    out.append(start + j * stride + pos + 1)
        if t is task:  # every window but the last scores every position, the first with no context at all
            assert bool((targets[:-1] != IGNORE).all())
        return out

    for length in (16, 32, 64, 256):
        got = labels(task, length)
        assert len(got) == len(set(got)) == 80 and got == labels(sliding, length)
    assert sliding.opts["eval"] != task.opts["eval"] and task.options["eval"].eval_only
    with pytest.raises(OptionError, match="eval"):
        tasks.build("lm", {"corpus": str(corpus), "eval": "strided"})


def test_lm_stdlib_corpus_is_recorded() -> None:
    task = tasks.build("lm")
    info = task.config()["corpus"]
    import platform

    assert info["source"] == "stdlib" and info["python_version"] == platform.python_version()
    assert info["n_files"] > 50 and len(info["files_sha256"]) == 64 and len(info["content_sha256"]) == 64
    assert len(task.corpus.validation) > 100_000 and len(task.corpus.train) > 5 * len(task.corpus.validation)
    assert task.metric == "perplexity" and not task.higher_is_better


def test_lm_bad_corpora(tmp_path: Path) -> None:
    with pytest.raises(OptionError, match="not a directory with train.txt and validation.txt"):
        tasks.build("lm", {"corpus": str(tmp_path / "nope")})
    (tmp_path / "train.txt").write_text("abc")
    with pytest.raises(OptionError, match="validation.txt; valid corpora"):
        tasks.build("lm", {"corpus": str(tmp_path)})
    try:
        import datasets  # noqa: F401
    except ImportError:
        with pytest.raises(OptionError, match="needs the optional 'datasets' package"):
            tasks.build("lm", {"corpus": "hf:roneneldan/TinyStories"})
    with pytest.raises(OptionError, match="names no dataset"):
        tasks.build("lm", {"corpus": "hf:"})


def test_lm_perplexity_through_evaluate(corpus: Path) -> None:
    from pebench.encodings import EncodingContext
    from pebench.encodings import build as build_encoding
    from pebench.engine.evaluation import evaluate
    from pebench.models import ModelConfig, Transformer

    task = tasks.build("lm", {"corpus": str(corpus), "context": 16})
    torch.manual_seed(0)
    model = Transformer(ModelConfig(256, d_model=16, n_layers=1, n_heads=2), build_encoding(
        "rope", EncodingContext(16, 2, 1, task.max_length())))  # fmt: skip
    out = evaluate(model, task, 32, "test", 6, seed=0, device=torch.device("cpu"), batch_size=4)
    assert out["n_samples"] == 2 and out["n_scored"] == 6 * 8  # 6 x L/2 labels in nonoverlapping windows of 32
    assert out["perplexity"] == pytest.approx(math.exp(out["loss"]))
    assert 100 < out["perplexity"] < 1000  # an untrained model is near the uniform 256


def test_runner_scores_exact_match_tasks_by_sequence_accuracy() -> None:
    from pebench.engine.runner import Case, Runner
    from pebench.engine.settings import Settings

    runner = Runner(Settings(steps=2, d_model=16, n_layers=1, n_heads=2, batch_size=8, eval_samples=8, device="cpu"))
    record = runner.run(Case("rope", "add_nocarry", 6))
    assert record.status == "ok" and record.metric == "exact_match"
    assert record.score == record.sequence_accuracy
    assert record.chance_level == pytest.approx(1e-5)


def test_cli_lists_every_task(capsys: pytest.CaptureFixture[str]) -> None:
    from pebench.cli import main

    assert main(["list", "tasks"]) == 0
    out = capsys.readouterr().out
    lines = {line.split()[0]: line for line in out.splitlines()}
    assert set(lines) == set(tasks.available())
    assert "train 1-8, eval quick [8, 16, 32] full [8-500], accuracy (higher is better), chance 0.5" in lines[
        "parity"]  # fmt: skip
    assert "train 1-40, eval quick [40, 80, 160] full [40-500], accuracy (higher is better), chance 0.2" in lines[
        "cycle_navigation"]  # fmt: skip
    assert "perplexity (lower is better), chance 256" in lines["lm"]
    assert "train 3-8, eval quick [8, 9, 16, 32] full [3-16, 32], exact_match" in lines["reverse"]


def test_quick_lengths_are_full_lengths() -> None:
    # the suite generates only the quick lengths in a quick run; they must be cases of the full tier too
    for name in tasks.available():
        task = tasks.build(name)
        assert set(task.eval_lengths("quick")) <= set(task.eval_lengths("full")), name
        assert task.max_length() == max(task.tokens(n) for n in task.eval_lengths("full"))


def test_lm_eval_windows_share_the_trained_model(corpus: Path) -> None:
    """lm's ``eval`` option changes only how a trained model is scored: one model serves both protocols."""
    from pebench.engine.runner import Case, Runner
    from pebench.engine.settings import Settings

    def runner(**opts: object) -> Runner:
        return Runner(Settings(task_options={"lm": {"corpus": str(corpus), "context": 16, **opts}}, device="cpu"))

    case = Case("alibi", "lm", 32)
    slide, tile, longer = runner(eval="sliding"), runner(eval="nonoverlapping"), runner(eval="sliding", context=32)
    assert slide.describe(case) != tile.describe(case)  # different results ...
    assert slide.model_key(case) == tile.model_key(case)  # ... of one trained model
    assert longer.model_key(case) != slide.model_key(case)  # the training context changes training
