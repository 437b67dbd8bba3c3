"""The six MAD tasks (Poli et al. 2024, arXiv:2403.17844; github.com/athms/mad-lab): each generator against its
definition, recomputed here in plain Python from the inputs alone (never from pebench's output), at the training
length and beyond it; chance levels; determinism; the conformance kit; bad options and lengths."""

from __future__ import annotations

from collections import Counter

import pytest
import torch

from pebench import tasks
from pebench.errors import LengthError, OptionError
from pebench.tasks import IGNORE
from pebench.testing import check_task

MAD = ["mad_recall", "mad_noisy_recall", "mad_fuzzy_recall", "mad_selective_copy", "mad_compression",
       "mad_memorization"]  # fmt: skip


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def rows(name: str, length: int, split: str = "test", n: int = 64, seed: int = 0, **options: object):
    task = tasks.build(name, options)
    batch = task.sample(n, length, gen(seed), split)
    return task, list(zip(batch.inputs.tolist(), batch.targets.tolist(), strict=True))


def lengths(name: str) -> list[int]:
    return tasks.build(name).eval_lengths("quick")  # the training length, 2x and 4x


# -- references: the expected targets of one sequence, from its inputs and the task's definition -------------------


def ref_recall(x: list[int], n_keys: int = 8, n_values: int = 8, noise_from: int | None = None) -> list[int]:
    """Multi-query recall over two-token slots: a slot of two noise tokens is skipped; a key's value is fixed within
    the sequence; it is scored at the key whenever the key was in an earlier (non-noise) pair; the last slot is a
    probe of an earlier key."""
    out = [IGNORE] * len(x)
    table: dict[int, int] = {}
    slots = [(x[i], x[i + 1]) for i in range(0, len(x), 2)]
    for j, (k, v) in enumerate(slots):
        if noise_from is not None and k >= noise_from:
            assert v >= noise_from and j < len(slots) - 1  # noise comes in whole slots, never the probe
            continue
        assert 0 <= k < n_keys and n_keys <= v < n_keys + n_values
        if k in table:
            assert table[k] == v  # one value per key per sequence
            out[2 * j] = v
        table[k] = v
    assert out[-2] != IGNORE  # the probe's key was presented before
    return out


def parse_runs(x: list[int], n_key_tokens: int) -> list[tuple[bool, list[int]]]:
    """Maximal runs of key tokens and of value tokens, in order: (is_key, tokens)."""
    runs: list[tuple[bool, list[int]]] = []
    for t in x:
        is_key = t < n_key_tokens
        if runs and runs[-1][0] == is_key:
            runs[-1][1].append(t)
        else:
            runs.append((is_key, [t]))
    return runs


def ref_fuzzy(x: list[int], split: str, pad: int = 15, n_key_tokens: int = 7, s: int = 3, r: int = 3) -> list[int]:
    """Fuzzy recall: strip the left padding, parse alternating key and value runs; each value token of a key seen in
    an earlier pair is the target one position before it. The inputs end one token before the query's value does."""
    n_pad = next(i for i, t in enumerate(x) if t != pad)
    assert n_pad >= 1 and pad not in x[n_pad:]
    runs = parse_runs(x[n_pad:], n_key_tokens)
    if runs[-1][0]:  # the query's value has one token, which the inputs leave out
        runs.append((False, []))
    assert runs[0][0] and len(runs) % 2 == 0  # key, value, key, value, ...
    out = [IGNORE] * len(x)
    table: dict[tuple[int, ...], list[int]] = {}
    pos = n_pad
    for i in range(0, len(runs), 2):
        key, value = tuple(runs[i][1]), runs[i + 1][1]
        last = i == len(runs) - 2
        assert len(set(key)) == len(key) <= s and (split == "train" or len(key) == s)
        if last:  # the query: its key was in an earlier pair; the inputs hold its value but the last token
            assert key in table and value == table[key][:-1]
            value = table[key]
        assert len(set(value)) == len(value) <= r and all(n_key_tokens <= t < pad for t in value)
        pos += len(key)
        if key in table:
            assert table[key] == value
            for j, t in enumerate(value):
                out[pos + j - 1] = t
        table[key] = value
        pos += len(value)
    assert pos == len(x) + 1
    return out


def ref_selective_copy(x: list[int], n: int = 8, blank: int = 14, copy: int = 15) -> list[int]:
    """The data tokens before COPY, in order, are the targets of the n blanks after it."""
    c = x.index(copy)
    assert c == len(x) - n - 1 and x[c + 1 :] == [blank] * n and copy not in x[c + 1 :]
    data = [t for t in x[:c] if t != blank]
    assert len(data) == n and x[c - 1] != blank  # MAD puts blanks only before data tokens
    assert all(0 <= t < blank for t in data)
    return [IGNORE] * (c + 1) + data


def ref_compression(x: list[int], comp: int = 15, blank: int = 16) -> list[int]:
    """x_1 .. x_{L-1} COMP BLANK x (L-1): the i-th blank's target is x_i."""
    length = (len(x) + 1) // 2
    data = x[: length - 1]
    assert x[length - 1] == comp and x[length:] == [blank] * (length - 1) and all(0 <= t < comp for t in data)
    return [IGNORE] * length + data


# -- the defining properties ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("length", lengths("mad_recall"))
def test_recall_targets_follow_the_rule(length: int) -> None:
    task, batch = rows("mad_recall", length, seed=length)
    assert task.vocab_size == 16 and task.train_length == 64
    for x, y in batch:
        assert y == ref_recall(x)
    _, train = rows("mad_recall", length, "train", seed=length)
    for x, y in train:  # MAD's training targets: the next token everywhere; the sequence obeys the same rule
        ref_recall(x)
        assert y == [*x[1:], IGNORE]


@pytest.mark.parametrize("length", lengths("mad_noisy_recall"))
def test_noisy_recall_targets_follow_the_rule(length: int) -> None:
    task, batch = rows("mad_noisy_recall", length, n=128, seed=length)
    assert task.vocab_size == 32
    slots = noise = 0
    for x, y in batch:
        assert y == ref_recall(x, noise_from=16)
        context = [x[i] for i in range(0, len(x) - 2, 2)]
        slots += len(context) - 1  # one slot per sequence is always a pair
        noise += sum(k >= 16 for k in context)
    assert noise / slots == pytest.approx(0.2, abs=0.02)
    _, train = rows("mad_noisy_recall", length, "train", seed=length)
    for x, y in train:
        ref_recall(x, noise_from=16)
        assert y == [*x[1:], IGNORE]


@pytest.mark.parametrize("length", lengths("mad_fuzzy_recall"))
def test_fuzzy_recall_targets_follow_the_rule(length: int) -> None:
    task, batch = rows("mad_fuzzy_recall", length, seed=length)
    assert task.vocab_size == 16 and task.min_length == 13
    for x, y in batch:
        assert y == ref_fuzzy(x, "test")
    _, train = rows("mad_fuzzy_recall", length, "train", seed=length)
    key_sizes: Counter[int] = Counter()
    for x, y in train:
        ref_fuzzy(x, "train")
        assert y[:-1] == x[1:] and y[-1] != IGNORE  # the next token everywhere
        key_sizes.update(len(run) for is_key, run in parse_runs([t for t in x if t != 15], 7) if is_key)
    assert set(key_sizes) == {1, 2, 3}  # training mixes key sizes; the test split uses only the longest


@pytest.mark.parametrize("length", lengths("mad_selective_copy"))
def test_selective_copy_targets_are_the_data_in_order(length: int) -> None:
    task, batch = rows("mad_selective_copy", length, n=256, seed=length)
    lead = []
    for x, y in batch:
        assert y == ref_selective_copy(x)
        lead.append(next(i for i, t in enumerate(x) if t != 14))  # blanks before the first data token
    # each of the L - 2n - 1 blanks precedes one of the n data tokens uniformly: mean b / n before the first
    assert sum(lead) / len(lead) == pytest.approx((length - 17) / 8, rel=0.15)
    _, train = rows("mad_selective_copy", length, "train", seed=length)
    assert all(y == ref_selective_copy(x) for x, y in train)


@pytest.mark.parametrize("length", lengths("mad_compression"))
def test_compression_reads_back_each_token_by_its_index(length: int) -> None:
    task, batch = rows("mad_compression", length, seed=length)
    assert task.tokens(length) == 2 * length - 1 and task.vocab_size == 17
    for x, y in batch:
        assert len(x) == 2 * length - 1 and y == ref_compression(x)


def test_memorization_is_one_fixed_map_answered_at_the_key() -> None:
    task = tasks.build("mad_memorization")
    # the map of the docstring, recomputed: 127 keys, value tokens 127..254, from map_seed 12345
    expected = (127 + torch.randperm(128, generator=gen(12345))[:127]).tolist()
    seen: dict[int, int] = {}
    for seed, length in enumerate([*lengths("mad_memorization"), 32, 32]):
        batch = task.sample(32, length, gen(seed), "test" if seed % 2 else "train")
        for x, y in zip(batch.inputs.tolist(), batch.targets.tolist(), strict=True):
            assert x[1::2] == [255] * (length // 2) and y[1::2] == [IGNORE] * (length // 2)
            for key, value in zip(x[0::2], y[0::2], strict=True):
                assert seen.setdefault(key, value) == value == expected[key]  # one value per token, at any length
    assert len(seen) == 127 and len(set(seen.values())) == 127  # every key seen; one-to-one
    assert task.vocab_size == 256 and task.chance_level == pytest.approx(1 / 127)


def test_memorization_mads_layout_and_map_seed() -> None:
    key_at = tasks.build("mad_memorization").sample(8, 64, gen(3))
    insert_at = tasks.build("mad_memorization", {"answer_at": "insert"}).sample(8, 64, gen(3))
    assert torch.equal(key_at.inputs, insert_at.inputs)
    assert torch.equal(key_at.targets[:, 0::2], insert_at.targets[:, 1::2])  # MAD: the value at INSERT
    assert (insert_at.targets[:, 0::2] == IGNORE).all()
    other = tasks.build("mad_memorization", {"map_seed": 7}).sample(8, 64, gen(3))
    assert torch.equal(other.inputs, key_at.inputs) and not torch.equal(other.targets, key_at.targets)


# -- chance levels, determinism, the kit ---------------------------------------------------------------------------


def test_chance_levels_and_answers_uniform() -> None:
    expected = {"mad_recall": 1 / 8, "mad_noisy_recall": 1 / 8, "mad_fuzzy_recall": 1 / 8,
                "mad_selective_copy": 1 / 14, "mad_compression": 1 / 15, "mad_memorization": 1 / 127}  # fmt: skip
    classes = {"mad_recall": range(8, 16), "mad_noisy_recall": range(8, 16), "mad_fuzzy_recall": range(7, 15),
               "mad_selective_copy": range(14), "mad_compression": range(15)}  # fmt: skip
    for name, chance in expected.items():
        task = tasks.build(name)
        assert task.chance_level == pytest.approx(chance, rel=1e-12), name
        if name in classes:  # the scored answers are uniform over the classes: a constant guess scores the chance
            y = task.sample(512, task.train_length, gen(5), "test").targets
            counts = Counter(y[y != IGNORE].tolist())
            assert sorted(counts) == list(classes[name]), name
            assert max(counts.values()) / sum(counts.values()) < chance * 1.3, name


@pytest.mark.parametrize(
    ("name", "length", "floor"),
    [("mad_recall", 64, 0.32), ("mad_noisy_recall", 32, 0.38), ("mad_noisy_recall", 128, 0.32),
     ("mad_fuzzy_recall", 32, 0.26), ("mad_fuzzy_recall", 128, 0.21)],
)
def test_recall_floor_of_a_guess_that_ignores_the_key(name: str, length: int, floor: float) -> None:
    """The docstrings' floor: the most frequent value so far (values are 8 .. 15 in recall and noisy recall, noise
    16 .. 31; 7 .. 14 in fuzzy recall) scores well above 1/8: about 0.32 on mad_recall at 64, on mad_noisy_recall
    0.38 at 32 and 0.32 at 128, on mad_fuzzy_recall 0.26 at 32 and 0.21 at 128."""
    task = tasks.build(name)
    values = range(7, 15) if name == "mad_fuzzy_recall" else range(8, 16)
    batch = task.sample(1000 if name == "mad_fuzzy_recall" else 300, length, gen(9), "test")
    hit = total = 0
    for x, y in zip(batch.inputs.tolist(), batch.targets.tolist(), strict=True):
        for i, target in enumerate(y):
            if target != IGNORE:
                seen = Counter(v for v in x[:i] if v in values).most_common(1)
                hit += bool(seen) and seen[0][0] == target
                total += 1
    assert hit / total == pytest.approx(floor, abs=0.03)


@pytest.mark.parametrize("name", ["mad_noisy_recall", "mad_fuzzy_recall"])
def test_noisy_and_fuzzy_recall_version_2_defaults(name: str) -> None:
    """Version 2 trains on 32 tokens for 2400 steps (the measured setting at which RoPE learns it, see the module
    docstrings); the quick tier follows the training length."""
    task = tasks.build(name)
    assert (task.version, task.train_length, task.default_steps) == ("2", 32, 2400)
    assert task.eval_lengths("quick") == [32, 64, 128]
    assert tasks.build(name, {"train_length": 64}).eval_lengths("quick") == [64, 128, 256]


@pytest.mark.parametrize("name", MAD)
def test_one_seed_one_batch(name: str) -> None:
    task = tasks.build(name)
    for split in ("train", "test"):
        for length in (task.train_length, 2 * task.train_length):
            a, b = task.sample(4, length, gen(11), split), task.sample(4, length, gen(11), split)
            assert torch.equal(a.inputs, b.inputs) and torch.equal(a.targets, b.targets)
            assert not torch.equal(a.inputs, task.sample(4, length, gen(12), split).inputs)


@pytest.mark.parametrize("name", MAD)
def test_conformance_kit(name: str) -> None:
    report = check_task(name)
    assert report.passed, "\n".join(report.lines())


def test_bad_lengths_and_options_are_one_line() -> None:
    for name in ("mad_recall", "mad_noisy_recall", "mad_memorization"):
        with pytest.raises(LengthError, match=r"length 65 is odd; valid lengths: even numbers >= \d+$"):
            tasks.build(name).sample(2, 65, gen())
    with pytest.raises(LengthError, match="length 12 is too short; valid lengths: >= 13"):
        tasks.build("mad_fuzzy_recall").sample(2, 12, gen())
    bad = [
        ("mad_fuzzy_recall", {"vocab_size": 6}, "option k_motif_size=3 exceeds the 2 distinct tokens"),
        ("mad_noisy_recall", {"noise_vocab_size": 30}, "valid: noise_vocab_size <= vocab_size - 4 = 28"),
        ("mad_selective_copy", {"n_copy": 40}, "option train_length=64 is invalid: length 64 is too short; valid "
                                               "lengths: >= 82"),
        ("mad_recall", {"train_length": 63}, "option train_length=63 is invalid: length 63 is odd"),
        ("mad_noisy_recall", {"frac_noise": 1.0}, r"valid: float in \[0, 1\)"),
        ("mad_memorization", {"answer_at": "value"}, "valid: one of 'key', 'insert'"),
    ]  # fmt: skip
    for name, options, message in bad:
        with pytest.raises(OptionError, match=message) as err:
            tasks.build(name, options)
        assert "\n" not in str(err.value), name
