"""The mechanism diagnostics (pebench/engine/diagnostics.py, issue 89): each function on attention weights, logits and
hidden states whose answer is known by construction, and :func:`diagnose` on tiny models, whose weights are the
kernels' own and whose scores it never changes."""

from __future__ import annotations

import math

import pytest
import torch

from pebench import encodings
from pebench.encodings import EncodingContext
from pebench.encodings.stick_breaking import stick_breaking_weights
from pebench.engine import diagnostics as dg
from pebench.engine.probe import cross_validated
from pebench.models import ModelConfig, Transformer

B, H, T = 2, 3, 20


def uniform(t: int = T, scale: float = 1.0) -> torch.Tensor:
    """``(B, H, T, T)``: row i spreads ``scale`` evenly over its i + 1 keys."""
    rows = torch.arange(1, t + 1, dtype=torch.float64)[:, None]
    return (scale * torch.ones(t, t, dtype=torch.float64).tril() / rows).expand(B, H, t, t).clone()


def diagonal(t: int = T) -> torch.Tensor:
    return torch.eye(t, dtype=torch.float64).expand(B, H, t, t).clone()


def on_first(t: int = T) -> torch.Tensor:
    w = torch.zeros(B, H, t, t, dtype=torch.float64)
    w[..., 0] = 1.0
    return w


# -- attn_entropy --------------------------------------------------------------------------------------------------


def test_a_uniform_causal_row_has_normalised_entropy_one() -> None:
    assert dg.attn_entropy(uniform()) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("weights", [diagonal, on_first])
def test_a_one_hot_row_has_entropy_zero(weights) -> None:
    assert dg.attn_entropy(weights()) == pytest.approx(0.0, abs=1e-12)


def test_a_half_row_has_the_entropy_of_two_keys_over_the_keys_it_sees() -> None:
    """Row i puts 1/2 on keys 0 and i: entropy log 2 over log(i + 1); the mean over rows 1..T-1 by hand."""
    w = torch.zeros(1, 1, T, T, dtype=torch.float64)
    for i in range(1, T):
        w[0, 0, i, 0] += 0.5
        w[0, 0, i, i] += 0.5
    w[0, 0, 0, 0] = 1.0
    want = sum(math.log(2) / math.log(i + 1) for i in range(1, T)) / (T - 1)
    assert dg.attn_entropy(w) == pytest.approx(want, rel=1e-12)


def test_rows_that_sum_below_one_are_normalised_by_their_sum_first() -> None:
    """Stick-breaking-like rows: half of each row attends to nothing; the share of what is attended is what counts,
    and a row attending to nothing at all (row 0 here) is left out."""
    w = uniform(scale=0.5)
    w[..., 0, 0] = 0.0
    assert dg.attn_entropy(w) == pytest.approx(1.0, abs=1e-12)
    assert dg.attended_mass(w) == pytest.approx(0.5 * (T - 1) / T, abs=1e-12)
    first = 0.3 * on_first()
    assert dg.sink_mass(first) == pytest.approx(1.0, abs=1e-12)
    assert dg.attn_entropy(first) == pytest.approx(0.0, abs=1e-12)
    two = torch.zeros(1, 1, 3, 3, dtype=torch.float64)
    two[0, 0, 1, 0] = 0.4  # row 1: all on key 0 -> entropy 0
    two[0, 0, 2, :2] = 0.2  # row 2: [0.2, 0.2, 0] -> [1/2, 1/2, 0]: log 2 / log 3
    assert dg.attn_entropy(two) == pytest.approx(math.log(2) / math.log(3) / 2, rel=1e-12)
    assert dg.sink_mass(two) == pytest.approx((1.0 + 0.5) / 2, rel=1e-12)


def test_weights_above_the_diagonal_are_ignored() -> None:
    w = uniform() + torch.ones(T, T, dtype=torch.float64).triu(1)
    assert dg.attn_entropy(w) == pytest.approx(1.0, abs=1e-12)
    assert dg.sink_mass(w) == pytest.approx(dg.sink_mass(uniform()), abs=1e-15)


# -- local_mass, sink_mass -----------------------------------------------------------------------------------------


def test_diagonal_attention_is_all_local_and_no_sink() -> None:
    assert dg.local_mass(diagonal(), window=5) == pytest.approx(1.0, abs=1e-12)
    assert dg.sink_mass(diagonal()) == pytest.approx(0.0, abs=1e-12)


def test_attention_on_the_first_token_is_all_sink_and_not_local_beyond_the_window() -> None:
    assert dg.sink_mass(on_first()) == pytest.approx(1.0, abs=1e-12)
    assert dg.local_mass(on_first(), window=5) == pytest.approx(0.0, abs=1e-12)


def test_uniform_rows_local_and_sink_mass_by_hand() -> None:
    """Uniform row i (i + 1 keys): window/(i + 1) of it within the window, 1/(i + 1) on the first token."""
    window = 6
    local = sum(window / (i + 1) for i in range(window, T)) / (T - window)
    sink = sum(1 / (i + 1) for i in range(1, T)) / (T - 1)
    assert dg.local_mass(uniform(), window) == pytest.approx(local, rel=1e-12)
    assert dg.sink_mass(uniform()) == pytest.approx(sink, rel=1e-12)


def test_local_mass_is_nan_when_no_row_sees_past_the_window() -> None:
    assert math.isnan(dg.local_mass(uniform(), window=T))
    assert dg.local_mass(uniform(), window=T - 1) == pytest.approx((T - 1) / T, rel=1e-12)


def test_weights_of_any_leading_shape_and_bad_shapes() -> None:
    assert dg.attn_entropy(uniform()[0, 0]) == pytest.approx(1.0, abs=1e-12)  # (T, T)
    assert dg.sink_mass(on_first().float()) == pytest.approx(1.0, abs=1e-6)  # float32
    with pytest.raises(ValueError, match=r"\(\.\.\., T, T\)"):
        dg.attn_entropy(torch.ones(2, 3, 4, 5))


# -- logit_range ---------------------------------------------------------------------------------------------------


def test_logit_range_is_the_nearest_rank_quantile_of_visible_logits() -> None:
    """Logits ``s_ij = -(i - j)`` (a linear bias): the visible |s| of rows 1..T-1 are the distances 0..i of each."""
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    logits = (-(i - j)).float().expand(B, H, T, T).clone()
    logits[..., 0, 0] = 1e6  # row 0: left out
    logits[..., 0, 1] = 1e6  # above the diagonal: left out
    values = sorted(d for i in range(1, T) for d in range(i + 1))
    for q in (0.5, 0.9, 0.99, 1.0):
        assert dg.logit_range(logits, q) == values[math.ceil(q * len(values)) - 1]


def test_logit_range_leaves_out_masked_keys_and_keeps_the_row_constant() -> None:
    logits = torch.full((1, 1, 4, 4), -3.0)
    logits[..., 3, 1] = -math.inf
    assert dg.logit_range(logits) == 3.0
    assert math.isnan(dg.logit_range(torch.full((1, 1, 3, 3), -math.inf)))


# -- the position probe --------------------------------------------------------------------------------------------


def linear_hidden(t: int, d: int = 8, batch: int = 3) -> torch.Tensor:
    """Hidden states exactly linear in position: ``h_t = t·a + c``."""
    gen = torch.Generator().manual_seed(0)
    a, c = torch.randn(d, generator=gen), torch.randn(d, generator=gen)
    return (torch.arange(t, dtype=torch.float64)[:, None] * a + c).expand(batch, t, d)


def test_a_probe_on_hidden_states_linear_in_position_scores_one_at_every_length() -> None:
    r2 = dg.position_probe(linear_hidden(16), {n: linear_hidden(n) for n in (16, 32, 64)})
    assert set(r2) == {16, 32, 64}
    for value in r2.values():
        assert value == pytest.approx(1.0, abs=1e-6)


def test_a_probe_on_hidden_states_without_position_predicts_the_mean_training_position() -> None:
    """Constant hidden states: the probe predicts the training positions' mean (L - 1)/2 everywhere, so R² is 0 at the
    training length and ``1 - Σ(y - (L-1)/2)² / Σ(y - ȳ)²`` at length T."""
    const = lambda t: torch.ones(2, t, 4, dtype=torch.float64)  # noqa: E731
    r2 = dg.position_probe(const(10), {10: const(10), 30: const(30)})
    assert r2[10] == pytest.approx(0.0, abs=1e-12)
    y = torch.arange(30, dtype=torch.float64)
    assert r2[30] == pytest.approx(float(1 - (y - 4.5).square().sum() / (y - y.mean()).square().sum()), rel=1e-12)


def test_the_probe_is_closed_form_ridge() -> None:
    hidden = torch.randn(2, 12, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    x, y = hidden.reshape(-1, 5), torch.arange(12, dtype=torch.float64).repeat(2)
    probe = dg.fit_probe(hidden, ridge=0.0)  # plain least squares
    ones = torch.cat([x, torch.ones(24, 1, dtype=torch.float64)], 1)
    coef = torch.linalg.lstsq(ones, y[:, None]).solution[:, 0]
    torch.testing.assert_close(probe.w, coef[:5])
    torch.testing.assert_close(probe.b, coef[5])
    with pytest.raises(ValueError, match=r"\(B, T, D\)"):
        dg.fit_probe(hidden[0])


def test_cross_validation_takes_a_probe_of_content_alone_to_about_zero() -> None:
    """Hidden states of pure content (no position), as many features as a few sequences have tokens: least squares
    fits the positions in-sample and misses them far on held-out sequences; the chosen constant predicts about the
    mean (R² about 0, not decodable), among the largest of the grid."""
    hidden = torch.randn(8, 16, 96, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    assert dg.probe_r2(dg.fit_probe(hidden), hidden) > 0.5  # in-sample: the content fits the positions
    ridge, r2 = cross_validated(hidden, ridges=(1e-3,))
    assert r2 < -0.5  # held out: it does not
    ridge, r2 = cross_validated(hidden)
    assert ridge >= 10 and abs(r2) < 0.05  # of the largest constants (10 to 1000 times the mean eigenvalue)


def test_cross_validation_keeps_a_decodable_position_near_one() -> None:
    """Position linear in the hidden states beside as many features of noise: the held-out R² stays near 1 with a
    small constant, and every other length is scored by the probe fitted on all sequences with it."""
    gen = torch.Generator().manual_seed(5)
    noise = lambda b, t: torch.randn(b, t, 24, dtype=torch.float64, generator=gen)  # noqa: E731
    with_position = lambda b, t: torch.cat([linear_hidden(t, batch=b), noise(b, t)], -1)  # noqa: E731
    hidden = with_position(8, 16)
    ridge, r2 = cross_validated(hidden)
    assert ridge <= 1e-2 and r2 > 0.99
    out = dg.position_probe(hidden, {32: with_position(2, 32)})
    assert out[16] == r2 and out[32] == pytest.approx(dg.probe_r2(dg.fit_probe(hidden, ridge), with_position(2, 32)),
                                                      abs=0.02)  # fmt: skip
    assert out[32] > 0.95


def test_cross_validation_holds_out_whole_sequences_in_contiguous_folds() -> None:
    """Folds are whole sequences (min(folds, B) contiguous groups): R²_cv is the pooled out-of-fold R² of probes fitted
    on the other groups."""
    hidden = torch.randn(6, 10, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(6))
    groups = [[0, 1], [2, 3], [4, 5]]
    preds = []
    for g in groups:
        probe = dg.fit_probe(hidden[[i for i in range(6) if i not in g]], 0.1)
        x = hidden[g].reshape(-1, 4)
        preds.append(x @ probe.w + probe.b)
    y = torch.arange(10, dtype=torch.float64).repeat(6)
    expected = 1 - float((y - torch.cat(preds)).square().sum() / (y - y.mean()).square().sum())
    assert cross_validated(hidden, ridges=(0.1,), folds=3) == (0.1, pytest.approx(expected, rel=1e-9))
    with pytest.raises(ValueError, match="at least 2 sequences"):
        cross_validated(hidden[:1])


# -- diagnose on a model -------------------------------------------------------------------------------------------

VOCAB, D, LAYERS, HEADS, TRAIN = 11, 32, 2, 2, 24
LENGTHS = (TRAIN, 2 * TRAIN, 3 * TRAIN)


def make_model(name: str, options: dict | None = None) -> Transformer:
    torch.manual_seed(0)
    ctx = EncodingContext(d_model=D, n_heads=HEADS, n_layers=LAYERS, max_len=4 * TRAIN, train_length=TRAIN)
    model = Transformer(ModelConfig(vocab_size=VOCAB, d_model=D, n_layers=LAYERS, n_heads=HEADS),
                        encodings.build(name, ctx, options))  # fmt: skip
    with torch.no_grad():  # away from initialisation, so the encoding's own parameters shape the attention
        for p in model.encoding.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return model


def sequences(n: int = 4) -> dict[int, torch.Tensor]:
    gen = torch.Generator().manual_seed(1)
    return {length: torch.randint(0, VOCAB, (n, length), generator=gen) for length in LENGTHS}


@pytest.mark.parametrize("name", ["rope", "alibi", "nope"])
def test_diagnose_reads_every_metric_at_every_length_and_layer(name: str) -> None:
    model = make_model(name)
    out = dg.diagnose(model, sequences(), TRAIN, n_sequences=3)
    metrics = ["attn_entropy", "local_mass", "sink_mass", "attended_mass", "logit_range"]
    assert set(out) == {*metrics, *(f"{m}_by_layer" for m in metrics), "logit_range_ratio",
                        "logit_range_ratio_by_layer", "position_r2"}  # fmt: skip
    for key, values in out.items():
        assert sorted(values) == list(LENGTHS), key
        if key.endswith("_by_layer"):
            assert all(len(v) == LAYERS for v in values.values()), key
    for length in LENGTHS:
        assert 0.0 <= out["attn_entropy"][length] <= 1.0
        assert 0.0 <= out["sink_mass"][length] <= 1.0
        assert out["attended_mass"][length] == pytest.approx(1.0, abs=1e-5)  # a softmax
        assert out["logit_range"][length] > 0 and out["position_r2"][length] <= 1.0
    assert math.isnan(out["local_mass"][TRAIN]) and 0.0 < out["local_mass"][3 * TRAIN] < 1.0
    assert out["logit_range_ratio"][TRAIN] == 1.0 and out["logit_range_ratio_by_layer"][TRAIN] == [1.0] * LAYERS
    assert out["attn_entropy"][TRAIN] == pytest.approx(sum(out["attn_entropy_by_layer"][TRAIN]) / LAYERS)


@pytest.mark.parametrize("name", ["rope", "alibi", "nope", "fox", "cope", "stick_breaking"])
def test_the_weights_are_the_kernels_own_and_the_logits_make_them(name: str) -> None:
    """Every layer's weights are the model's own attention maps bit for bit; its logits give them back through the
    softmax (or stick-breaking's weights)."""
    model = make_model(name).eval()
    tokens = sequences(2)[2 * TRAIN]
    readout = dg.read_layers(model, tokens)
    assert len(readout.weights) == LAYERS and readout.hidden.shape == (2, 2 * TRAIN, D)
    assert readout.logits is not None
    for layer, (weights, logits) in enumerate(zip(readout.weights, readout.logits, strict=True)):
        assert torch.equal(weights, model.attention_maps(tokens, layer=layer))
        assert logits is not None and logits.shape == weights.shape
        if name == "stick_breaking":
            again = stick_breaking_weights(logits, 0, model.encoding.opts["remainder"])
        else:
            again = logits.softmax(-1)
        torch.testing.assert_close(again, weights, atol=1e-6, rtol=1e-5)


def test_a_kernel_with_scores_of_its_own_exposes_no_logits() -> None:
    """PaTH's kernel computes its own scores: its weights are read, its logit range is NaN, not a guess."""
    model = make_model("path")
    out = dg.diagnose(model, sequences(), TRAIN, n_sequences=2)
    assert all(math.isnan(v) for v in out["logit_range"].values())
    assert all(0.0 <= v <= 1.0 for v in out["attn_entropy"].values())


def test_diagnose_on_stick_breaking_dropping_its_leftover() -> None:
    out = dg.diagnose(make_model("stick_breaking", {"remainder": "drop"}), sequences(), TRAIN, n_sequences=2)
    assert all(value < 1.0 for value in out["attended_mass"].values())
    assert all(0.0 <= value <= 1.0 for value in out["attn_entropy"].values())


@pytest.mark.parametrize("name", ["rope", "alibi", "nope", "pi", "randomized_rope", "tape"])
def test_diagnose_never_changes_a_score(name: str) -> None:
    """The model's logits after :func:`diagnose` are the logits before it, bit for bit, and its mode is restored."""
    model = make_model(name).train()
    tokens = sequences(2)[TRAIN]
    with torch.no_grad():
        before = model(tokens)
    dg.diagnose(model, sequences(), TRAIN, n_sequences=2)
    assert model.training
    with torch.no_grad():
        after = model(tokens)
    assert torch.equal(before, after)


def test_first_block_is_the_hidden_state_read_layers_reads() -> None:
    model = make_model("rope")
    tokens = sequences(3)[TRAIN]
    assert torch.equal(dg.first_block(model, tokens), dg.read_layers(model, tokens, logits=False).hidden)


def test_diagnose_runs_only_the_first_sequences_and_needs_the_training_length() -> None:
    model = make_model("rope")
    data = sequences(4)
    few = dg.diagnose(model, {n: t[:2] for n, t in data.items()}, TRAIN, n_sequences=8, logits=False)
    assert _nan_equal(few, dg.diagnose(model, data, TRAIN, n_sequences=2, logits=False, probe_sequences=2))
    assert "logit_range" not in few
    # the probe reads the training length's first probe_sequences, the attention diagnostics the first n_sequences
    wide = dg.diagnose(model, data, TRAIN, n_sequences=2, logits=False)
    assert wide["position_r2"] != few["position_r2"]
    assert _nan_equal({k: v for k, v in wide.items() if k != "position_r2"},
                      {k: v for k, v in few.items() if k != "position_r2"})  # fmt: skip
    with pytest.raises(ValueError, match="training length 99"):
        dg.diagnose(model, data, 99)


def _nan_equal(a: dict, b: dict) -> bool:
    """Whether two :func:`diagnose` results are equal, NaN equal to NaN."""
    flat = lambda d: repr(sorted((k, sorted(v.items())) for k, v in d.items()))  # noqa: E731
    return flat(a) == flat(b)
