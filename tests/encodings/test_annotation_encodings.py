"""The encodings that read task annotations (issue 15): Abacus embeddings (McLeish et al. 2024, arXiv:2405.17399) and
position coupling (Cho et al. 2024, arXiv:2405.20671), checked from the papers' definitions; the model's hook and its
one-line error; the runner's and the suite's refusal of tasks that lack the annotations; and, on real addition
batches, the model properties the generic model tests check with random tokens (causality, batch independence,
attention maps, gradient flow)."""

from __future__ import annotations

import pytest
import torch

from pebench import encodings, tasks
from pebench.encodings import EncodingContext
from pebench.engine.packing import packable
from pebench.engine.runner import Case, Runner
from pebench.engine.settings import Settings
from pebench.errors import ConfigError, LengthError, PebenchError
from pebench.models import ModelConfig, Transformer
from pebench.tasks.base import COUPLED_POSITION, DIGIT_INDEX

D = 16
ADDITION = tasks.build("addition")


def build(name: str, options: dict | None = None, max_len: int = 64) -> Transformer:
    torch.manual_seed(0)
    ctx = EncodingContext(d_model=D, n_heads=2, n_layers=2, max_len=max_len)
    cfg = ModelConfig(vocab_size=14, d_model=D, n_layers=2, n_heads=2)
    return Transformer(cfg, encodings.build(name, ctx, options))


def batch(seed: int = 0, n: int = 6):
    return ADDITION.sample_train(n, torch.Generator().manual_seed(seed))


def test_needs_and_capabilities():
    assert encodings.get("abacus").needs == {DIGIT_INDEX}
    assert encodings.get("coupling").needs == {COUPLED_POSITION}
    for name in ("abacus", "coupling"):
        cls = encodings.get(name)
        assert cls.family == "absolute" and cls.version == "1" and cls.paper and cls.description
        assert not cls.position_indexed  # neither reads the index positions: no randomized_ or DroPE wrapping
        assert not packable(build(name))  # training offsets come from each seed's own generator
    assert {n for n in encodings.available() if encodings.get(n).needs} == {"abacus", "coupling"}
    assert encodings.get("rope").needs == frozenset() and encodings.get("randomized_rope").needs == frozenset()
    assert "abacus" not in encodings.registry.wrappable()


# -- Abacus --------------------------------------------------------------------------------------------------------


def test_abacus_adds_the_table_row_of_the_digit_index_at_evaluation():
    model = build("abacus").eval()
    enc = model.encoding
    b = batch()
    idx = b.annotations[DIGIT_INDEX]
    vec = enc.embed(None, annotations=b.annotations, generator=None)
    assert vec.shape == (*b.inputs.shape, D)
    table = enc.table.weight
    for row in range(idx.shape[0]):
        for t in range(idx.shape[1]):
            torch.testing.assert_close(vec[row, t], table[int(idx[row, t])])  # non-digits: row 0
    # the model adds it to the unscaled token embeddings (no √d_model scaling for annotation vectors)
    with torch.no_grad():
        x, _ = model.hidden_states(b.inputs, annotations=b.annotations)
        torch.testing.assert_close(x, model.embed(b.inputs) + vec)
    assert enc.table.num_embeddings == 64 + 100 + 1  # max_len + K + 1, K = the paper's 100


def offsets(enc, annotations, index, gen):
    """The offset k of each row of ``enc.embed`` in training, read back from the table (None: a row whose
    digits disagree)."""
    vec = enc.embed(None, annotations=annotations, generator=gen)
    table = enc.table.weight
    ks = []
    for row in range(index.shape[0]):
        found = set()
        for t in range(index.shape[1]):
            i = int(index[row, t])
            if i == 0:
                torch.testing.assert_close(vec[row, t], table[0])  # 0 stays 0
                continue
            match = [k for k in range(enc.max_offset + 1) if torch.equal(vec[row, t], table[i + k])]
            assert len(match) == 1
            found.add(match[0])
        ks.append(found.pop() if len(found) == 1 else None)
    return ks


def test_abacus_training_offset_is_one_k_per_sequence_within_max_offset_and_seeded():
    model = build("abacus", {"max_offset": 7}).train()
    b = batch(n=40)
    idx = b.annotations[DIGIT_INDEX]
    ks = offsets(model.encoding, b.annotations, idx, torch.Generator().manual_seed(11))
    assert None not in ks  # the same k for every digit of a sequence
    assert all(0 <= k <= 7 for k in ks) and set(ks) == set(range(8))  # 40 draws over 0..7: every value
    again = offsets(model.encoding, b.annotations, idx, torch.Generator().manual_seed(11))
    other = offsets(model.encoding, b.annotations, idx, torch.Generator().manual_seed(12))
    assert again == ks and other != ks  # deterministic for a seeded generator
    # at evaluation (generator None) no offset, in train mode too
    evaluated = model.encoding.embed(None, annotations=b.annotations, generator=None)
    torch.testing.assert_close(evaluated, model.encoding.table(idx))


def test_abacus_max_offset_zero_and_bad_options():
    model = build("abacus", {"max_offset": 0})
    b = batch()
    out = model.encoding.embed(None, annotations=b.annotations, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(out, model.encoding.table(b.annotations[DIGIT_INDEX]))
    with pytest.raises(PebenchError, match="max_offset=-1 is out of range"):
        build("abacus", {"max_offset": -1})
    with pytest.raises(LengthError, match="outside the table"):
        model.encoding.embed(None, annotations={DIGIT_INDEX: torch.tensor([[1, 2, 65]])}, generator=None)


# -- position coupling -----------------------------------------------------------------------------------------


def significance_groups(b):
    """(row, [token positions]) of the digits of equal significance across a + b = c, re-derived from the tokens of
    the default (reversed) order: the j-th digit of each number as written has significance j."""
    groups = []
    for row in range(b.inputs.shape[0]):
        seq = b.inputs[row].tolist()
        runs, start = [], None
        for t, tok in enumerate([*seq, 99]):
            if tok < 10 and start is None:
                start = t
            elif tok >= 10 and start is not None:
                runs.append(list(range(start, t)))
                start = None
        assert len(runs) == 3  # a, b and the sum
        for j in range(max(map(len, runs))):
            groups.append((row, [run[j] for run in runs if j < len(run)]))
    return groups


@pytest.mark.parametrize("training", [False, True])
def test_coupling_gives_digits_of_equal_significance_one_vector(training):
    model = build("coupling").train(training)
    b = batch(n=8)
    gen = torch.Generator().manual_seed(0) if training else None
    vec = model.encoding.embed(None, annotations=b.annotations, generator=gen)
    groups = significance_groups(b)
    assert any(len(g) == 3 for _, g in groups)
    for row, group in groups:
        for t in group[1:]:
            torch.testing.assert_close(vec[row, t], vec[row, group[0]])
    for row, group in groups:  # and different significances differ
        others = [g for r, g in groups if r == row and g != group]
        assert all(not torch.equal(vec[row, group[0]], vec[row, g[0]]) for g in others)


def test_coupling_training_start_is_random_per_sequence_and_keeps_ids_in_the_table():
    model = build("coupling", {"max_position": 20}).train()
    enc = model.encoding
    b = batch(n=50)
    ids = b.annotations[COUPLED_POSITION]
    shifted = enc.ids(ids, torch.Generator().manual_seed(5))
    s = [int((shifted[r] - ids[r])[ids[r] > 0][0]) for r in range(50)]
    for r in range(50):
        assert ((shifted[r] - ids[r])[ids[r] > 0] == s[r]).all()  # one start per sequence
        assert (shifted[r][ids[r] == 0] == 0).all()  # padding stays 0
        assert 0 <= s[r] <= 20 - int(ids[r].max())  # the largest id stays within max_position
    assert len(set(s)) > 5
    assert torch.equal(enc.ids(ids, torch.Generator().manual_seed(5)), shifted)  # seeded
    assert torch.equal(enc.ids(ids, None), ids)  # evaluation: start id 1, as given
    fixed = build("coupling", {"random_start": False}).encoding
    assert torch.equal(fixed.ids(ids, torch.Generator().manual_seed(5)), ids)
    assert build("coupling").encoding.table.num_embeddings == 64 + 1  # max_position 0: the model's max_len
    with pytest.raises(LengthError, match="raise the option max_position"):
        enc.embed(None, annotations={COUPLED_POSITION: torch.tensor([[1, 21]])}, generator=None)


# -- the model, the runner and the suite -------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["abacus", "coupling"])
def test_the_model_names_a_missing_annotation_in_one_line(name):
    model = build(name)
    b = batch()
    need = next(iter(encodings.get(name).needs))
    for given in (None, {}, {"other": b.inputs}):
        with pytest.raises(ValueError, match=f"encoding {name} needs the '{need}' annotation") as err:
            model(b.inputs, annotations=given)
        assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match=f"annotation '{need}' must be"):
        model(b.inputs, annotations={need: b.annotations[need][:, :-1]})
    with pytest.raises(ValueError, match="needs the"):
        model.attention_maps(b.inputs)
    assert build("rope")(b.inputs).shape == (*b.inputs.shape, 14)  # others ignore annotations, given or not
    assert build("rope")(b.inputs, annotations=b.annotations).shape == (*b.inputs.shape, 14)


def test_runner_refuses_an_encoding_on_a_task_without_its_annotations():
    runner = Runner(Settings(steps=1, d_model=16, n_heads=2, n_layers=1, device="cpu", progress=False))
    reason = "abacus needs digit_index annotations, which task k_back does not provide"
    assert runner.not_applicable("abacus", "k_back") == reason
    assert encodings.not_applicable("coupling", tasks.get("binary_multiplication")) == (
        "coupling needs coupled_position annotations, which task binary_multiplication does not provide"
    )
    assert runner.not_applicable("abacus", "addition") is None and runner.not_applicable("rope", "k_back") is None
    case = Case("abacus", "k_back", 64)
    for call in (runner.run, runner.build_model):
        with pytest.raises(ConfigError) as err:
            call(case)
        assert str(err.value) == f"abacus-k_back-L64: {reason}"


@pytest.mark.parametrize("name", ["abacus", "coupling"])
def test_model_properties_on_addition_batches(name):
    """Causality, batch independence, attention maps and gradient flow, which tests/model checks with random tokens
    for the encodings that need no annotations."""
    model = build(name).eval()
    b = batch(n=4)
    x, notes = b.inputs, b.annotations
    with torch.no_grad():
        full = model(x, annotations=notes)
        cut = 7  # change every token and annotation after it: the first 8 outputs stay
        y = x.clone()
        y[:, cut + 1 :] = (y[:, cut + 1 :] + 3) % 14
        other = {k: v.clone() for k, v in notes.items()}
        for v in other.values():
            v[:, cut + 1 :] = (v[:, cut + 1 :] + 1) % 5
        torch.testing.assert_close(model(y, annotations=other)[:, : cut + 1], full[:, : cut + 1], atol=1e-5, rtol=0)
        alone = model(x[:1], annotations={k: v[:1] for k, v in notes.items()})
        torch.testing.assert_close(full[:1], alone, atol=1e-5, rtol=0)
        maps = model.attention_maps(x, annotations=notes)
    assert maps.shape == (4, 2, x.shape[1], x.shape[1])
    torch.testing.assert_close(maps.sum(-1), torch.ones(maps.shape[:-1]), atol=1e-5, rtol=0)
    assert (maps[..., torch.ones(x.shape[1], x.shape[1], dtype=torch.bool).triu(1)] == 0).all()
    model.train()
    logits = model(x, annotations=notes, generator=torch.Generator().manual_seed(0))
    torch.nn.functional.cross_entropy(logits.reshape(-1, 14), b.targets.reshape(-1), ignore_index=-100).backward()
    grad = model.encoding.table.weight.grad
    assert grad is not None and torch.isfinite(grad).all() and grad.abs().sum() > 0
    assert all(p.grad is not None for p in model.parameters())
