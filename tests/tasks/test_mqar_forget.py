"""mqar_forget (Zoology's forgetting MQAR, github.com/HazyResearch/zoology ``zoology/data/forgetting_mqar.py``): every
scored query's target is the last value assigned to its key before the query, read off the sequence by a pure-Python
reference; the updates change the answer; the values are uniform (chance 1/V); determinism, conformance, bad
options."""

from __future__ import annotations

from collections import Counter

import pytest
import torch

from pebench import tasks
from pebench.errors import LengthError, OptionError
from pebench.tasks import IGNORE
from pebench.testing import check_task

K, V = 64, 64  # version 1's key and value vocabularies: keys 0..63, values 64..127, FILL 128
V1 = {"n_updates": 4, "n_keys": K, "n_values": V, "train_length": 64}  # version 1's defaults, as options


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def recall(x: list[int], k: int = K, v: int = V) -> tuple[list[int], dict[int, list[int]]]:
    """The expected targets of one sequence, from its tokens alone: a key followed by a value assigns that value
    (later assignments overwrite earlier ones); any other key is a query whose answer is the key's latest value so
    far. Also every key's assignments in order."""
    is_key = lambda t: 0 <= t < k  # noqa: E731
    is_value = lambda t: k <= t < k + v  # noqa: E731
    latest: dict[int, int] = {}
    history: dict[int, list[int]] = {}
    expected = [IGNORE] * len(x)
    for t, tok in enumerate(x):
        if not is_key(tok):
            continue
        if t + 1 < len(x) and is_value(x[t + 1]):
            latest[tok] = x[t + 1]
            history.setdefault(tok, []).append(x[t + 1])
        else:
            assert tok in latest, f"query of key {tok} before any assignment"
            expected[t] = latest[tok]
    return expected, history


@pytest.mark.parametrize("options", [{}, {"n_pairs": 4}, {"n_pairs": 5, "n_updates": 0}, {"n_pairs": 3, "n_updates": 3},
                                     {"n_pairs": 6, "n_updates": 2, "n_keys": 6, "n_values": 7}])  # fmt: skip
def test_each_query_answers_the_keys_most_recent_value(options) -> None:
    task = tasks.build("mqar_forget", options)
    p, u = task.p, task.u
    k, v = int(task.opts["n_keys"]), int(task.opts["n_values"])
    for length in sorted({task.min_length, task.train_length, 2 * task.train_length}):
        batch = task.sample(64, length, gen(length))
        assert batch.inputs.shape == (64, length) and int(batch.inputs.max()) <= k + v
        for x, y in zip(batch.inputs.tolist(), batch.targets.tolist(), strict=True):
            expected, history = recall(x, k, v)
            assert y == expected
            assert sum(t != IGNORE for t in y) == p  # every key queried once
            assert sorted(history) == sorted({x[t] for t, target in enumerate(y) if target != IGNORE})
            changed = [h for h in history.values() if len(h) == 2]
            assert len(history) == p and len(changed) == u and all(len(h) <= 2 for h in history.values())
            assert all(h[0] != h[1] for h in changed)  # an update always changes the answer
            firsts = [h[0] for h in history.values()]
            assert len(set(firsts)) == p  # first values distinct, as in the generator
            # recency matters: the answer differs from the first value exactly for the updated keys
            stale = sum(target != history[x[t]][0] for t, target in enumerate(y) if target != IGNORE)
            assert stale == u


def test_layout_pairs_then_updates_then_queries() -> None:
    task = tasks.build("mqar_forget", V1)  # P = 8, U = 4: 24 context tokens
    batch = task.sample(200, 64, gen(1))
    x, y = batch.inputs, batch.targets
    assert (x[:, 0:24:2] < K).all() and ((x[:, 1:24:2] >= K) & (x[:, 1:24:2] < K + V)).all()
    assert (y[:, :24] == IGNORE).all()
    queries = y != IGNORE
    assert (x[queries] < K).all() and (x[:, 24:][~queries[:, 24:]] == K + V).all()  # keys or FILL
    q = queries.nonzero()[:, 1]
    assert int(q.min()) == 24 and int(q.max()) == 63  # the whole query section is used
    # the updated keys are among the first eight, each once
    for row in x.tolist():
        assert set(row[16:24:2]) <= set(row[0:16:2]) and len(set(row[16:24:2])) == 4


def test_values_uniform_and_chance_level() -> None:
    task = tasks.build("mqar_forget", V1)
    assert task.chance_level == pytest.approx(1 / V) and task.metric == "accuracy" and task.vocab_size == K + V + 1
    y = task.sample(4000, 64, gen(2)).targets
    counts = Counter(y[y != IGNORE].tolist())
    assert sorted(counts) == list(range(K, K + V))
    assert max(counts.values()) / min(counts.values()) < 1.4  # 500 per value expected
    # a predictor uniform over the values is right 1/V of the time
    guess = torch.randint(K, K + V, y.shape, generator=gen(3))
    hits = (guess == y)[y != IGNORE].float().mean().item()
    assert hits == pytest.approx(1 / V, abs=0.006)


def test_declared_lengths_and_defaults() -> None:
    task = tasks.build("mqar_forget")  # version 2: P = 8, U = 2, K = V = 16, trained at 32 (28 = 2 * (8 + 2) + 8)
    assert task.version == "2" and (task.p, task.u, task.k, task.v) == (8, 2, 16, 16)
    assert (task.train_length, task.min_length, task.chance_level, task.vocab_size) == (32, 28, 1 / 16, 33)
    assert task.eval_lengths("quick") == [32, 64, 128]
    assert task.sample_train(4, gen()).inputs.shape == (4, 32)
    with pytest.raises(LengthError, match=r"length 27 is too short; valid lengths: >= 28"):
        task.sample(2, 27, gen())
    old = tasks.build("mqar_forget", V1)
    assert (old.p, old.u, old.train_length, old.min_length) == (8, 4, 64, 32)
    assert old.eval_lengths("quick") == [64, 128, 256] and old.eval_lengths("full") == [64, 128, 256, 512, 1024]


def test_deterministic_in_the_generator() -> None:
    task = tasks.build("mqar_forget")
    a, b = task.sample(8, 64, gen(5), "test"), task.sample(8, 64, gen(5), "test")  # 2T
    assert torch.equal(a.inputs, b.inputs) and torch.equal(a.targets, b.targets)
    assert not torch.equal(a.inputs, task.sample(8, 64, gen(6), "test").inputs)
    state = torch.random.get_rng_state()
    task.sample_train(8, gen(7))
    assert torch.equal(state, torch.random.get_rng_state())  # the global generator is untouched


def test_conforms() -> None:
    for options in ({}, {"n_pairs": 4, "n_updates": 4}):
        report = check_task("mqar_forget", options)
        assert report.passed, "\n".join(report.lines())


@pytest.mark.parametrize(("options", "message"), [
    ({"n_updates": 9}, "option n_updates=9 is out of range; valid: int in [0, n_pairs=8]"),
    ({"n_keys": 7}, "option n_keys=7 is out of range; valid: int >= n_pairs=8"),
    ({"n_pairs": 17}, "option n_keys=16 is out of range; valid: int >= n_pairs=17"),
    ({"n_values": 5}, "option n_values=5 is out of range; valid: int >= n_pairs=8"),
    ({"n_values": 1}, "option n_values=1 is out of range; valid: int in [2, 100000]"),
    ({"n_updates": -1}, "option n_updates=-1 is out of range"),
    ({"forget": 1}, "unknown option 'forget'; valid options: n_keys, n_pairs, n_updates, n_values, train_length"),
])  # fmt: skip
def test_bad_options_are_one_line(options, message) -> None:
    with pytest.raises(OptionError, match=message.replace("[", r"\[").replace("]", r"\]")) as err:
        tasks.build("mqar_forget", options)
    assert "\n" not in str(err.value)
