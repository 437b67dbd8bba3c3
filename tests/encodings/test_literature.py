"""Reference tests of the encodings beyond the core five (from the studies and the literature), each from its
paper's formula with the expected numbers written out (derivations in the comments), never from the implementation's
own output."""

from __future__ import annotations

import math

import pytest
import torch

from pebench import encodings
from pebench.encodings import EncodingContext
from pebench.encodings import cope as cope_module
from pebench.encodings.base import PositionalEncoding, Wrapper
from pebench.encodings.digits import digit_table
from pebench.encodings.drope import drop_step
from pebench.encodings.registry import ENCODINGS, wrappable
from pebench.encodings.t5 import t5_bucket
from pebench.encodings.xpos import xpos_zeta
from pebench.errors import LengthError, OptionError, UnknownNameError
from pebench.models.transformer import ModelConfig, Transformer

VOCAB, D, HEADS, LAYERS, MAX_LEN, T = 17, 32, 4, 2, 128, 16


def ctx(d_model: int = D, heads: int = HEADS, layers: int = LAYERS, max_len: int = MAX_LEN) -> EncodingContext:
    return EncodingContext(d_model=d_model, n_heads=heads, n_layers=layers, max_len=max_len, train_length=64)


def make_model(name: str, seed: int = 0, options: dict | None = None) -> Transformer:
    torch.manual_seed(seed)
    cfg = ModelConfig(vocab_size=VOCAB, d_model=D, n_layers=LAYERS, n_heads=HEADS)
    return Transformer(cfg, encodings.build(name, ctx(), options)).eval()


def tokens(batch: int = 2, length: int = T, seed: int = 1) -> torch.Tensor:
    return torch.randint(0, VOCAB, (batch, length), generator=torch.Generator().manual_seed(seed))


def perturb_encoding(model: Transformer, seed: int = 5) -> None:
    """Move every learned parameter of the encoding off its initial value (no zero or identity init left)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.encoding.parameters():
            p.add_(0.3 * torch.randn(p.shape, generator=gen))


# -- shift invariance: relative encodings ignore a constant shift of every position, absolute ones do not -----------

RELATIVE = [
    "rope", "lrope", "alibi", "t5", "kerple", "xpos", "nope", "pope", "pi", "ntk", "yarn", "cope", "drope",
    "randomized_rope", "p_rope", "partial_rope", "llama3", "longrope", "nope_qknorm", "rope_nope", "stick_breaking",
    "fox", "hope", "selective", "cable", "ssmax_rope", "ssmax_nope", "tape", "carope", "path",
]  # fmt: skip
ABSOLUTE = [
    "sinusoidal", "learned", "sinonly", "binary", "binary_norm", "decimal", "decimal_norm", "sininit",
    "randomized_learned",
]  # fmt: skip
MIXED = ["fire", "irope"]  # relative while every position is below its threshold L, absolute beyond (tested below);
# irope: while p + 1 < floor_scale (tests/encodings/test_logit_temperature.py)
FOURIER = ["fope"]  # rotary, but each pair a Fourier series of several frequencies: the cross terms between them
# depend on the absolute positions (shift-invariant only with identity coefficients; tests/encodings/test_hope_fope.py)
ANNOTATED = ["abacus", "coupling"]  # read the task's annotations, never the positions: no shift test here (they need
# annotated batches; their embeddings are tested on them in tests/encodings/test_annotation_encodings.py)


def test_every_encoding_is_classified():
    assert sorted(RELATIVE + ABSOLUTE + MIXED + FOURIER + ANNOTATED) == encodings.available()
    assert [n for n in encodings.available() if encodings.get(n).needs] == ANNOTATED


@pytest.mark.parametrize("name", RELATIVE)
@pytest.mark.parametrize("shift", [1, 37, 100])
def test_relative_encodings_ignore_a_shift(name, shift):
    model = make_model(name)
    perturb_encoding(model)
    x = tokens()
    with torch.no_grad():
        base = model(x, torch.arange(T))
        shifted = model(x, torch.arange(T) + shift)
    torch.testing.assert_close(shifted, base, atol=2e-5, rtol=1e-4)


@pytest.mark.parametrize("name", ABSOLUTE)
def test_absolute_encodings_see_a_shift(name):
    model = make_model(name)
    x = tokens()
    with torch.no_grad():
        base = model(x, torch.arange(T))
        shifted = model(x, torch.arange(T) + 37)
    assert (shifted - base).abs().max() > 1e-3


def test_fire_is_relative_below_its_threshold_and_absolute_beyond():
    model = make_model("fire", options={"threshold": 64.0})
    perturb_encoding(model)
    with torch.no_grad():
        model.encoding.threshold.fill_(64.0)
        x = tokens()
        base = model(x, torch.arange(T))
        below = model(x, torch.arange(T) + 40)  # positions 40..55 < L = 64: normaliser ψ(L) for every query
        beyond = model(x, torch.arange(T) + 100)  # positions 100..115 > L: normaliser ψ(i) varies
    torch.testing.assert_close(below, base, atol=2e-5, rtol=1e-4)
    assert (beyond - base).abs().max() > 1e-4


# -- digit encodings -----------------------------------------------------------------------------------------------


def test_binary_table():
    table = digit_table(torch.tensor([0, 5, 200, 255]), 8, 2)
    assert table.tolist() == [
        [0, 0, 0, 0, 0, 0, 0, 0],
        [0, 0, 0, 0, 0, 1, 0, 1],  # 5 = 101
        [1, 1, 0, 0, 1, 0, 0, 0],  # 200 = 128 + 64 + 8
        [1, 1, 1, 1, 1, 1, 1, 1],
    ]


def test_binary_and_binary_norm_embeddings():
    c = ctx(d_model=8)
    binary = encodings.build("binary", c).embed(torch.tensor([5, 6]))
    norm = encodings.build("binary_norm", c).embed(torch.tensor([5, 6]))
    assert binary.tolist() == [[0, 0, 0, 0, 0, 1, 0, 1], [0, 0, 0, 0, 0, 1, 1, 0]]
    assert norm.tolist() == [[-1, -1, -1, -1, -1, 1, -1, 1], [-1, -1, -1, -1, -1, 1, 1, -1]]


def test_decimal_and_decimal_norm_embeddings():
    c = ctx(d_model=6)
    dec = encodings.build("decimal", c).embed(torch.tensor([305, 90817, 9]))
    assert dec.tolist() == [[0, 0, 0, 3, 0, 5], [0, 9, 0, 8, 1, 7], [0, 0, 0, 0, 0, 9]]
    norm = encodings.build("decimal_norm", c).embed(torch.tensor([305]))
    # (digit - 4.5) / 4.5: 0 -> -1, 3 -> -1/3, 5 -> 1/9
    torch.testing.assert_close(norm, torch.tensor([[-1.0, -1.0, -1.0, -1 / 3, -1.0, 1 / 9]]))


def test_digit_encodings_at_full_width_do_not_overflow():
    # d = 128 digits: the weights 2^127 and 10^127 do not fit in int64; those digits are 0.
    emb = encodings.build("binary", ctx(d_model=128)).embed(torch.tensor([1023, 2**40 + 1]))
    assert emb[0, -10:].tolist() == [1.0] * 10 and emb[0, :-10].abs().sum() == 0
    assert emb[1, -1] == 1 and emb[1, -41] == 1 and emb[1].sum() == 2
    dec = encodings.build("decimal", ctx(d_model=128)).embed(torch.tensor([987654321]))
    assert dec[0, -9:].tolist() == [9, 8, 7, 6, 5, 4, 3, 2, 1] and dec[0, :-9].abs().sum() == 0


def test_digit_encodings_reject_negative_positions():
    with pytest.raises(LengthError, match="non-negative"):
        encodings.build("binary", ctx()).embed(torch.tensor([-1, 0]))


# -- sinonly, sininit ----------------------------------------------------------------------------------------------


def test_sinonly_values():
    # d = 4, base 10000: frequencies 10000^(-k/4) = 1, 0.1, 0.01, 0.001; at pos = 2: sin 2, sin 0.2, sin 0.02, sin 0.002
    emb = encodings.build("sinonly", ctx(d_model=4)).embed(torch.tensor([0, 2]))
    expected = torch.tensor([[0.0, 0.0, 0.0, 0.0], [0.9092974268, 0.1986693308, 0.0199986667, 0.0019999987]])
    torch.testing.assert_close(emb, expected, atol=1e-7, rtol=1e-6)


def test_sininit_starts_as_the_sinusoid_even_inside_the_model():
    # row 1 at d = 4: sin(1), cos(1), sin(1/100), cos(1/100)
    torch.manual_seed(0)
    c = ctx(d_model=4, heads=1)
    model = Transformer(ModelConfig(vocab_size=VOCAB, d_model=4, n_heads=1), encodings.build("sininit", c))
    row = model.encoding.table.weight[1].detach()
    torch.testing.assert_close(row, torch.tensor([0.8414709848, 0.5403023059, 0.0099998333, 0.9999500004]))
    assert model.encoding.table.weight.requires_grad


# -- lrope ---------------------------------------------------------------------------------------------------------


def test_lrope_starts_as_rope_and_learns_one_scale_vector_per_layer():
    rope, lrope = make_model("rope"), make_model("lrope")
    assert lrope.encoding.rate_scale.shape == (LAYERS, D // HEADS // 2)
    x = tokens()
    with torch.no_grad():
        torch.testing.assert_close(lrope(x), rope(x), atol=1e-6, rtol=0)
        lrope.encoding.rate_scale[1].mul_(2.0)  # layer 1 now turns twice as fast: angle m·θ_i·2
        q = torch.zeros(1, 1, 1, D // HEADS)
        q[..., 0] = 1.0
        rotated, _ = lrope.encoding.transform_qk(q, q, torch.tensor([3]), layer=1)
    # pair 0 has θ_0 = 1: the unit vector (1, 0) rotated by 3 · 1 · 2 = 6 rad is (cos 6, sin 6)
    torch.testing.assert_close(rotated[0, 0, 0, :2], torch.tensor([0.9601702867, -0.2794154982]))


# -- T5 ------------------------------------------------------------------------------------------------------------


def test_t5_buckets():
    # N = 32, D = 128, E = 16: n < 16 -> n; else 16 + trunc(ln(n/16) / ln 8 · 16), at most 31.
    # 20: ln 1.25 / ln 8 · 16 = 1.717 -> 17;  32: 16/3 = 5.33 -> 21;  64: 32/3 = 10.67 -> 26;
    # 100: ln 6.25 / ln 8 · 16 = 14.10 -> 30;  127: 15.94 -> 31;  128 and beyond: 32 -> capped at 31.
    n = torch.tensor([0, 1, 15, 16, 17, 20, 32, 64, 100, 127, 128, 1000, -5])
    assert t5_bucket(n).tolist() == [0, 1, 15, 16, 16, 17, 21, 26, 30, 31, 31, 31, 0]


def test_t5_bias_reads_the_bucket_table_per_head_and_is_shared_by_layers():
    enc = encodings.build("t5", ctx())
    with torch.no_grad():
        enc.bias.weight.copy_(torch.arange(32 * HEADS, dtype=torch.float32).view(32, HEADS))
    bias = enc.attn_bias(None, None, torch.arange(40), layer=0)
    assert bias.shape == (HEADS, 40, 40)
    # query 37, key 5: distance 32 -> bucket 21 -> row 21 of the table
    assert bias[:, 37, 5].tolist() == [21 * HEADS + h for h in range(HEADS)]
    assert bias[:, 3, 3].tolist() == list(range(HEADS))
    torch.testing.assert_close(enc.attn_bias(None, None, torch.arange(40), layer=1), bias)


# -- KERPLE --------------------------------------------------------------------------------------------------------


def test_kerple_log_formula_and_positivity():
    enc = encodings.build("kerple", ctx())
    with torch.no_grad():
        enc.p[0].fill_(2.0)
        enc.a[0].fill_(0.5)
        enc.a[1].fill_(-3.0)  # clamped to 0.01
        enc.p[1].fill_(1.0)
    bias = enc.attn_bias(None, None, torch.arange(8), layer=0)
    # -p·ln(1 + a·3) = -2·ln 2.5 = -1.8325814637
    torch.testing.assert_close(bias[:, 5, 2], torch.full((HEADS,), -1.8325814637))
    assert bias[:, 4, 4].abs().max() == 0
    # layer 1: a clamped to 0.01: -ln(1.03) = -0.0295588022
    torch.testing.assert_close(enc.attn_bias(None, None, torch.arange(8), layer=1)[:, 5, 2],
                               torch.full((HEADS,), -0.0295588022))


# -- FIRE ----------------------------------------------------------------------------------------------------------


def test_fire_normalised_distance():
    enc = encodings.build("fire", ctx(), {"threshold": 4.0})
    with torch.no_grad():
        enc.c.fill_(1.0)
    x = enc.normalised_distance(torch.arange(8))[0]
    # i = 6, j = 2: ψ(4)/ψ(max(4, 6)) = ln 5 / ln 7 = 0.8270874753
    # i = 2, j = 1: ψ(1)/ψ(max(4, 2)) = ln 2 / ln 5 = 0.4306765581
    torch.testing.assert_close(x[6, 2], torch.tensor(0.8270874753))
    torch.testing.assert_close(x[2, 1], torch.tensor(0.4306765581))
    assert x[5, 5] == 0 and (x <= 1 + 1e-6).all() and (x >= 0).all()
    bias = enc.attn_bias(None, None, torch.arange(8), layer=0)
    torch.testing.assert_close(bias[:, 6, 2], enc.mlp(torch.tensor([0.8270874753]))[:])


# -- xPos ----------------------------------------------------------------------------------------------------------


def test_xpos_zeta():
    # ζ_i = (2i/8 + 0.4)/1.4 for d = 8: 0.4/1.4, 0.65/1.4, 0.9/1.4, 1.15/1.4
    torch.testing.assert_close(xpos_zeta(8).float(), torch.tensor([0.2857142857, 0.4642857143, 0.6428571429,
                                                                    0.8214285714]))


def test_xpos_score_is_rotation_times_decay():
    enc = encodings.build("xpos", ctx(d_model=8, heads=1))
    unit = torch.zeros(1, 1, 2, 8)
    unit[..., 0] = 1.0  # pair 0, θ_0 = 1, ζ_0 = 0.4/1.4
    q, k = enc.transform_qk(unit, unit, torch.tensor([2, 5]), layer=0)
    # query at n = 5, key at m = 2: cos(3·1)·ζ_0^(3/512) = -0.9899924966 · 0.9926864 = -0.9827521538
    score = (q[0, 0, 1] * k[0, 0, 0]).sum()
    torch.testing.assert_close(score, torch.tensor(-0.9827521538), atol=1e-6, rtol=1e-6)


def test_xpos_is_finite_far_from_zero_and_rejects_spans_float32_cannot_hold():
    model = make_model("xpos")
    x = tokens()
    with torch.no_grad():
        near = model(x, torch.arange(T))
        # uncentred, ζ_0^(-10^6/512) = exp(1953·1.2528) overflows; centred, only the span of 16 matters
        far = model(x, torch.arange(T) + 1_000_000)
    assert torch.isfinite(far).all()
    torch.testing.assert_close(far, near, atol=2e-5, rtol=1e-4)
    enc = encodings.build("xpos", ctx())
    q = torch.zeros(1, HEADS, 2, D // HEADS)
    with pytest.raises(LengthError, match="xpos: a span of 100000 positions overflows float32; valid spans"):
        enc.transform_qk(q, q, torch.tensor([0, 100_000]), layer=0)


# -- PoPE ----------------------------------------------------------------------------------------------------------


def test_pope_score_formula():
    # head_dim 2, base 10000: θ = (1, 0.01); q = (0.3, -1), k = (2, 0.5), query t = 5, key s = 2, δ = (-0.5, -1).
    # sp(0.3) = 0.8543552, sp(-1) = 0.3132617, sp(2) = 2.1269280, sp(0.5) = 0.9740770
    # Σ sp(q_c) sp(k_c) cos(3θ_c - δ_c) = 1.8171542·cos(3.5) + 0.3051412·cos(1.03) = -1.7016842 + 0.1570923
    enc = encodings.build("pope", ctx(d_model=2, heads=1, layers=1))
    assert enc.qk_dim == 4
    with torch.no_grad():
        enc.phase_bias.copy_(torch.tensor([[[-0.5, -1.0]]]))
    # rows at positions (2, 5): the query vector sits in row 1 (t = 5), the key vector in row 0 (s = 2)
    q = torch.tensor([[0.0, 0.0], [0.3, -1.0]]).view(1, 1, 2, 2)
    k = torch.tensor([[2.0, 0.5], [0.0, 0.0]]).view(1, 1, 2, 2)
    q2, k2 = enc.transform_qk(q, k, torch.tensor([2, 5]), layer=0)
    assert q2.shape == k2.shape == (1, 1, 2, 4)
    score = (q2[0, 0, 1] * k2[0, 0, 0]).sum()
    torch.testing.assert_close(score, torch.tensor(-1.5445918996), atol=1e-6, rtol=1e-6)


def test_pope_phase_bias_is_clamped_to_minus_two_pi_and_zero():
    enc = encodings.build("pope", ctx())
    assert (enc.phase_bias == 0).all()  # initialised to 0
    with torch.no_grad():
        enc.phase_bias[0, 0, 0] = 1.0
        enc.phase_bias[0, 0, 1] = -10.0
    delta = enc.delta(0)
    assert delta[0, 0, 0].item() == 0.0 and delta[0, 0, 1].item() == pytest.approx(-2 * math.pi)


# -- CoPE ----------------------------------------------------------------------------------------------------------


def cope_example() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    # head_dim 1 (scale 1), T = 2: q = (1, 2), k = (0, ln 3 / 2); table e = (10, 20, 30, 40).
    q = torch.tensor([1.0, 2.0]).view(1, 1, 2, 1)
    k = torch.tensor([0.0, math.log(3) / 2]).view(1, 1, 2, 1)
    table = torch.tensor([[10.0, 20.0, 30.0, 40.0]])
    return q, k, table


def test_cope_bias_by_hand():
    # gates: g_00 = σ(0) = 0.5; g_10 = σ(2·0) = 0.5, g_11 = σ(ln 3) = 0.75.
    # positions: p_00 = 0.5; p_11 = 0.75, p_10 = 0.5 + 0.75 = 1.25.
    # e[0.5] = 15, e[0.75] = 0.75·20 + 0.25·10 = 17.5, e[1.25] = 0.25·30 + 0.75·20 = 22.5.
    # bias = q_i·e[p_ij]: b_00 = 15, b_10 = 2·22.5 = 45, b_11 = 2·17.5 = 35.
    q, k, table = cope_example()
    bias = cope_module.cope_bias(q, k, table, scale=1.0)[0, 0]
    torch.testing.assert_close(bias[0, 0], torch.tensor(15.0))
    torch.testing.assert_close(bias[1], torch.tensor([45.0, 35.0]))
    # npos = 2: p_10 = 1.25 is clamped to 1 -> e = 20 -> b_10 = 40
    clamped = cope_module.cope_bias(q, k, table[:, :2], scale=1.0)[0, 0]
    torch.testing.assert_close(clamped[1, 0], torch.tensor(40.0))


def test_cope_chunks_agree_with_one_pass(monkeypatch):
    gen = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 3, 20, 4, generator=gen), torch.randn(2, 3, 20, 4, generator=gen)
    table = torch.randn(4, 8, generator=gen)
    whole = cope_module.cope_bias(q, k, table, 0.5)
    monkeypatch.setattr(cope_module, "CHUNK_ELEMENTS", 2 * 3 * 20 * 3)  # 3 query rows per chunk
    torch.testing.assert_close(cope_module.cope_bias(q, k, table, 0.5), whole)


# -- DroPE ---------------------------------------------------------------------------------------------------------


def test_drope_switch_step():
    assert drop_step(0.7, 10) == 7 and drop_step(0.7, 600) == 420 and drop_step(0.5, 3) == 1
    enc = encodings.build("drope", ctx())
    seen = []
    for step in range(10):
        enc.on_step(step, 10)
        seen.append(enc.active)
    assert seen == [True] * 7 + [False] * 3


def test_drope_after_the_drop_is_the_model_without_encoding():
    drope, nope = make_model("drope"), make_model("nope")
    x = tokens()
    with torch.no_grad():
        rope_out = make_model("rope")(x)
        torch.testing.assert_close(drope(x), rope_out)  # before the drop: RoPE
        drope.set_step(9, 10)
        torch.testing.assert_close(drope(x), nope(x))  # after: no positional encoding
    # the switch survives a checkpoint round trip
    fresh = make_model("drope")
    fresh.load_state_dict(drope.state_dict())
    assert not fresh.encoding.active
    with torch.no_grad():
        torch.testing.assert_close(fresh(x), nope(x))


def test_drope_keeps_the_base_parameters_and_takes_any_base():
    model = make_model("drope", options={"base": "learned", "drop_at": 0.5})
    assert "encoding.inner.table.weight" in model.state_dict() and model.encoding.base is model.encoding.inner
    bases = wrappable()
    assert len(bases) == 28 and {"rope", "alibi", "learned", "t5", "yarn", "p_rope", "rope_nope", "irope"} <= set(bases)
    for name in ("nope", "nope_qknorm", "cope", "drope", "randomized_rope", "randomized_learned", "ssmax_rope"):
        assert name not in bases  # ignore positions, or wrap another encoding themselves
    with pytest.raises(OptionError, match="option base='cope' is invalid; valid: one of 'alibi'"):
        make_model("drope", options={"base": "cope"})


def test_a_new_position_indexed_encoding_is_wrappable_without_editing_a_list():
    class Shifted(PositionalEncoding):
        name = "shifted_test_encoding"

    class Blind(PositionalEncoding):
        name = "blind_test_encoding"
        position_indexed = False

    ENCODINGS.register(Shifted)
    ENCODINGS.register(Blind)
    try:
        assert "shifted_test_encoding" in wrappable() and "blind_test_encoding" not in wrappable()
        assert isinstance(encodings.build("drope", ctx(), {"base": "shifted_test_encoding"}).inner, Shifted)
        assert issubclass(encodings.get("randomized_shifted_test_encoding"), Wrapper)
        assert "randomized_blind_test_encoding" not in ENCODINGS
    finally:
        del ENCODINGS._items["shifted_test_encoding"], ENCODINGS._items["blind_test_encoding"]


# -- randomized ----------------------------------------------------------------------------------------------------


def test_randomized_evaluates_like_the_wrapped_encoding():
    wrapped, plain = make_model("randomized_rope", options={"base": 500.0}), make_model("rope", options={"base": 500.0})
    assert wrapped.encoding.inner.opts["base"] == 500.0
    x = tokens()
    with torch.no_grad():
        torch.testing.assert_close(wrapped(x), plain(x))


def test_randomized_names_resolve_for_position_indexed_encodings_only():
    assert "randomized_rope" in encodings.available() and "randomized_learned" in encodings.available()
    assert "randomized_alibi" not in encodings.available()
    assert encodings.get("randomized_alibi") is encodings.get("randomized_alibi")
    assert encodings.get("randomized_alibi").name == "randomized_alibi"
    for bad in ("randomized_nope", "randomized_cope", "randomized_randomized_rope", "randomized_nosuch"):
        with pytest.raises(UnknownNameError, match="valid encodings: .*randomized_rope"):
            encodings.get(bad)
