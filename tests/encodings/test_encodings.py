"""Positional encodings against the papers' formulas (values written out by hand, never taken from the
implementation's own output), whole-model shift (in)variance, the registry and option validation."""

from __future__ import annotations

import math

import pytest
import torch

from pebench import encodings
from pebench.encodings import EncodingContext
from pebench.encodings.alibi import alibi_slopes
from pebench.encodings.rope import rope_inv_freq, rotate_pairs
from pebench.encodings.sinusoidal import sinusoid_table
from pebench.errors import LengthError, OptionError, PebenchError, UnknownNameError
from pebench.models.transformer import ModelConfig, Transformer
from pebench.options import Option, parse_assignments, resolve

CORE = ["alibi", "learned", "nope", "rope", "sinusoidal"]
VOCAB, D, LAYERS, HEADS, T = 17, 32, 2, 4, 16


def ctx(d_model: int = D, n_heads: int = HEADS, n_layers: int = LAYERS, max_len: int = 128) -> EncodingContext:
    return EncodingContext(d_model=d_model, n_heads=n_heads, n_layers=n_layers, max_len=max_len)


def make_model(name: str, max_len: int = 128, seed: int = 0) -> Transformer:
    torch.manual_seed(seed)
    cfg = ModelConfig(vocab_size=VOCAB, d_model=D, n_layers=LAYERS, n_heads=HEADS)
    return Transformer(cfg, encodings.build(name, ctx(max_len=max_len))).eval()


def tokens(batch: int, length: int = T, seed: int = 1) -> torch.Tensor:
    return torch.randint(0, VOCAB, (batch, length), generator=torch.Generator().manual_seed(seed))


# -- RoPE (Su et al. 2021) ---------------------------------------------------------------------------------------


def rope(head_dim: int = 8, base: float | None = None):
    options = None if base is None else {"base": base}
    return encodings.build("rope", ctx(d_model=head_dim * 2, n_heads=2), options)


def test_rope_preserves_norms():
    torch.manual_seed(0)
    pe = rope(8)
    q, k = torch.randn(2, 2, T, 8), torch.randn(2, 2, T, 8)
    for positions in (torch.arange(T), torch.arange(T) + 1000, torch.randint(0, 5000, (2, T))):
        q2, k2 = pe.transform_qk(q, k, positions, 0)
        assert q2.shape == q.shape and k2.shape == k.shape
        torch.testing.assert_close(q2.norm(dim=-1), q.norm(dim=-1), atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(k2.norm(dim=-1), k.norm(dim=-1), atol=1e-5, rtol=1e-5)


def test_rope_position_zero_is_identity():
    torch.manual_seed(0)
    pe = rope(8)
    q, k = torch.randn(1, 2, 1, 8), torch.randn(1, 2, 1, 8)
    q2, k2 = pe.transform_qk(q, k, torch.zeros(1, dtype=torch.long), 0)
    torch.testing.assert_close(q2, q, atol=0, rtol=0)
    torch.testing.assert_close(k2, k, atol=0, rtol=0)


def _rope_dot(pe, q, k, m: int, n: int) -> torch.Tensor:
    """(R(m) q) · (R(n) k) for per-head vectors q, k of shape (H, d)."""
    qs = torch.stack([q, torch.zeros_like(q)], dim=1)[None]  # (1, H, 2, d): q at slot 0
    ks = torch.stack([torch.zeros_like(k), k], dim=1)[None]  # k at slot 1
    q2, k2 = pe.transform_qk(qs, ks, torch.tensor([m, n]), 0)
    return (q2[0, :, 0] * k2[0, :, 1]).sum(-1)


@pytest.mark.parametrize("base", [None, 500.0])
def test_rope_dot_product_depends_only_on_relative_position(base):
    torch.manual_seed(0)
    pe = rope(8, base)
    q, k = torch.randn(2, 8), torch.randn(2, 8)
    for m, n in [(0, 0), (3, 1), (1, 3), (10, 2), (7, 7)]:
        ref = _rope_dot(pe, q, k, m, n)
        for c in (1, 5, 37, 100, 513):
            torch.testing.assert_close(_rope_dot(pe, q, k, m + c, n + c), ref, atol=1e-4, rtol=1e-4)
    # ... and it does depend on the relative position
    assert (_rope_dot(pe, q, k, 5, 0) - _rope_dot(pe, q, k, 0, 0)).abs().max() > 1e-2


@pytest.mark.parametrize("m", [0, 1, 2, 5, 11])
def test_rope_head_dim_2_rotates_by_m(m):
    # θ_0 = base^0 = 1 whatever the base: (1, 0) at position m -> (cos m, sin m); (0, 1) -> (-sin m, cos m).
    pe = encodings.build("rope", ctx(d_model=2, n_heads=1), {"base": 123.0})
    q = torch.tensor([1.0, 0.0]).view(1, 1, 1, 2)
    k = torch.tensor([0.0, 1.0]).view(1, 1, 1, 2)
    q2, k2 = pe.transform_qk(q, k, torch.tensor([m]), 0)
    torch.testing.assert_close(q2.flatten(), torch.tensor([math.cos(m), math.sin(m)]), atol=1e-6, rtol=0)
    torch.testing.assert_close(k2.flatten(), torch.tensor([-math.sin(m), math.cos(m)]), atol=1e-6, rtol=0)


@pytest.mark.parametrize("m", [1, 3, 50, 314])
def test_rope_head_dim_4_second_pair_frequency(m):
    # θ_1 = 10000^(-2/4) = 0.01: the second pair rotates by m·0.01, the first by m·1.
    torch.testing.assert_close(rope_inv_freq(4, 10000.0), torch.tensor([1.0, 0.01]), atol=1e-9, rtol=0)
    pe = encodings.build("rope", ctx(d_model=4, n_heads=1))
    x = torch.tensor([1.0, 0.0, 1.0, 0.0]).view(1, 1, 1, 4)
    q2, _ = pe.transform_qk(x, x, torch.tensor([m]), 0)
    expected = torch.tensor([math.cos(m), math.sin(m), math.cos(0.01 * m), math.sin(0.01 * m)])
    torch.testing.assert_close(q2.flatten(), expected, atol=1e-5, rtol=0)


def test_rope_inv_freq_values():
    # θ_i = base^(-2i/d), d = 8, base 10000: 1, 10000^-0.25 = 0.1, 10000^-0.5 = 0.01, 10000^-0.75 = 0.001.
    torch.testing.assert_close(rope_inv_freq(8, 10000.0), torch.tensor([1.0, 0.1, 0.01, 0.001]), atol=1e-9, rtol=1e-6)
    torch.testing.assert_close(rope_inv_freq(4, 100.0), torch.tensor([1.0, 0.1]), atol=1e-9, rtol=1e-6)


def test_rotate_pairs_by_hand():
    a, b = 0.3, 1.7
    x = torch.tensor([2.0, -1.0, 0.5, 4.0])
    cos, sin = torch.tensor([math.cos(a), math.cos(b)]), torch.tensor([math.sin(a), math.sin(b)])
    expected = torch.tensor(
        [
            2.0 * math.cos(a) + 1.0 * math.sin(a),
            2.0 * math.sin(a) - 1.0 * math.cos(a),
            0.5 * math.cos(b) - 4.0 * math.sin(b),
            0.5 * math.sin(b) + 4.0 * math.cos(b),
        ]
    )
    torch.testing.assert_close(rotate_pairs(x, cos, sin), expected, atol=1e-6, rtol=0)


def test_rope_per_sample_positions_match_rows():
    torch.manual_seed(0)
    pe = rope(8)
    q, k = torch.randn(3, 2, T, 8), torch.randn(3, 2, T, 8)
    pos = torch.arange(T)[None] + torch.tensor([[0], [7], [40]])
    q2, k2 = pe.transform_qk(q, k, pos, 0)
    for row in range(3):
        qr, kr = pe.transform_qk(q[row : row + 1], k[row : row + 1], pos[row], 0)
        torch.testing.assert_close(q2[row : row + 1], qr, atol=1e-6, rtol=0)
        torch.testing.assert_close(k2[row : row + 1], kr, atol=1e-6, rtol=0)


def test_rope_rejects_odd_head_dim():
    with pytest.raises(ValueError, match="even"):
        encodings.build("rope", ctx(d_model=12, n_heads=4))


# -- whole-model shift (in)variance ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["nope", "rope", "alibi"])
@pytest.mark.parametrize("shift", [1, 37])
def test_relative_encodings_are_shift_invariant(name, shift):
    model = make_model(name)
    x = tokens(3)
    with torch.no_grad():
        base = model(x)
        shifted = model(x, torch.arange(T) + shift)
        per_sample = model(x, torch.arange(T)[None] + torch.tensor([[shift], [0], [2 * shift]]))
    torch.testing.assert_close(shifted, base, atol=1e-4, rtol=0)
    torch.testing.assert_close(per_sample, base, atol=1e-4, rtol=0)


@pytest.mark.parametrize("name", ["sinusoidal", "learned"])
def test_absolute_encodings_are_not_shift_invariant(name):
    model = make_model(name, max_len=T + 64)
    x = tokens(3)
    with torch.no_grad():
        base = model(x)
        shifted = model(x, torch.arange(T) + 37)
    assert (shifted - base).abs().max() > 1e-3


# -- ALiBi (Press et al. 2022) -----------------------------------------------------------------------------------


SLOPES_8 = [0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125, 0.00390625]
ALIBI_SLOPES = {
    1: [0.00390625],
    2: [0.0625, 0.00390625],
    4: [0.25, 0.0625, 0.015625, 0.00390625],
    6: [0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125],
    8: SLOPES_8,
    12: SLOPES_8 + [0.7071067811865476, 0.3535533905932738, 0.17677669529663687, 0.08838834764831845],
}


@pytest.mark.parametrize("n", sorted(ALIBI_SLOPES))
def test_alibi_slopes(n):
    got = alibi_slopes(n)
    assert len(got) == n
    assert got == pytest.approx(ALIBI_SLOPES[n], rel=1e-12, abs=0)


def test_alibi_slopes_reject_non_positive():
    with pytest.raises(ValueError):
        alibi_slopes(0)


def test_alibi_bias_is_minus_slope_times_distance():
    pe = encodings.build("alibi", ctx(n_heads=4))
    slopes = [0.25, 0.0625, 0.015625, 0.00390625]
    n = 6
    bias = pe.attn_bias(None, None, torch.arange(n), 0)
    assert bias.shape == (4, n, n)
    for h, m in enumerate(slopes):
        for i in range(n):
            for j in range(i + 1):
                assert bias[h, i, j].item() == pytest.approx(-m * (i - j), abs=1e-7)
    # per-sample positions: (B, H, T, T), the same values (the bias depends on distances only)
    per_sample = pe.attn_bias(None, None, torch.arange(n)[None] + torch.tensor([[0], [9]]), 0)
    assert per_sample.shape == (2, 4, n, n)
    lower = torch.ones(n, n, dtype=torch.bool).tril()
    for b in range(2):
        torch.testing.assert_close(per_sample[b][:, lower], bias[:, lower], atol=1e-6, rtol=0)


# -- sinusoidal (Vaswani et al. 2017) ----------------------------------------------------------------------------


def vaswani(pos: int, d: int) -> list[float]:
    out = []
    for i in range(d // 2):
        angle = pos / 10000 ** (2 * i / d)
        out += [math.sin(angle), math.cos(angle)]
    return out


def test_sinusoidal_reference_values():
    expected = {
        0: [0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0],
        1: [math.sin(1), math.cos(1), math.sin(0.1), math.cos(0.1)]
        + [math.sin(0.01), math.cos(0.01), math.sin(0.001), math.cos(0.001)],
        5: [math.sin(5), math.cos(5), math.sin(0.5), math.cos(0.5)]
        + [math.sin(0.05), math.cos(0.05), math.sin(0.005), math.cos(0.005)],
    }
    pe = encodings.build("sinusoidal", ctx(d_model=8, n_heads=2))
    table = pe.embed(torch.tensor([0, 1, 5]))
    assert table.shape == (3, 8)
    for row, pos in enumerate((0, 1, 5)):
        torch.testing.assert_close(table[row], torch.tensor(expected[pos]), atol=1e-6, rtol=0)
        assert expected[pos] == pytest.approx(vaswani(pos, 8), abs=1e-15)


def test_sinusoidal_larger_table_and_batched_positions():
    pos = torch.tensor([[0, 3, 100], [7, 2000, 1]])
    table = sinusoid_table(pos, 32)
    assert table.shape == (2, 3, 32)
    for b in range(2):
        for t in range(3):
            torch.testing.assert_close(table[b, t], torch.tensor(vaswani(int(pos[b, t]), 32)), atol=1e-6, rtol=0)


# -- learned -----------------------------------------------------------------------------------------------------


def test_learned_positions_past_the_table_raise():
    pe = encodings.build("learned", ctx(max_len=10))
    assert pe.embed(torch.arange(10)).shape == (10, D)
    with pytest.raises(LengthError, match=r"0\.\.9"):
        pe.embed(torch.arange(11))
    with pytest.raises(LengthError, match=r"0\.\.9"):
        pe.embed(torch.tensor([[0, 1], [2, 10]]))
    with pytest.raises(LengthError, match=r"-1.*0\.\.9"):
        pe.embed(torch.tensor([-1, 0, 1]))


def test_learned_model_longer_than_table_raises():
    model = make_model("learned", max_len=8)
    with pytest.raises(LengthError, match=r"0\.\.7"):
        model(tokens(2, 9))
    with pytest.raises(LengthError):
        model(tokens(2, 4), torch.arange(4) + 5)


def test_learned_rows_beyond_training_length_get_no_gradient():
    model = make_model("learned", max_len=32).train()
    x = tokens(4, 8)
    before = model.encoding.table.weight.detach().clone()
    logits = model(x)
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB), x.roll(-1, dims=1).reshape(-1))
    loss.backward()
    grad = model.encoding.table.weight.grad
    assert grad is not None
    assert (grad[:8].abs().sum(-1) > 0).all()
    assert (grad[8:] == 0).all()
    torch.optim.SGD(model.parameters(), lr=0.1).step()
    after = model.encoding.table.weight.detach()
    assert not torch.equal(after[:8], before[:8])
    assert torch.equal(after[8:], before[8:])


# -- registry and options ----------------------------------------------------------------------------------------


def test_registry_lists_the_core_encodings():
    names = encodings.available()
    assert set(names).issuperset(CORE)
    assert names == sorted(names)
    for name in CORE:
        cls = encodings.get(name)
        assert cls.name == name
        assert cls.description and cls.paper
    assert {n for n, _, _ in encodings.describe()}.issuperset(CORE)


def test_every_encoding_names_its_family():
    from pebench.encodings.base import FAMILIES

    families = {name: encodings.get(name).family for name in encodings.available()}
    assert set(families.values()) <= set(FAMILIES), families
    assert {n for n, f in families.items() if f == "bias"} == {"alibi", "t5", "kerple", "fire"}
    assert families["rope"] == families["yarn"] == families["pope"] == "rotary"
    assert families["nope"] == "none" and families["cope"] == "content" and families["sinusoidal"] == "absolute"
    assert families["randomized_rope"] == encodings.get("randomized_alibi").family == families["drope"] == "wrapper"


def test_unknown_encoding_lists_valid_names():
    with pytest.raises(UnknownNameError) as err:
        encodings.get("bogus")
    msg = str(err.value)
    assert "'bogus'" in msg
    for name in CORE:
        assert name in msg
    assert isinstance(err.value, PebenchError) and isinstance(err.value, KeyError)
    with pytest.raises(UnknownNameError):
        encodings.build("bogus", ctx())


def test_unknown_option_is_rejected():
    with pytest.raises(OptionError, match=r"'foo'.*valid options: base"):
        encodings.build("rope", ctx(), {"foo": 1})
    with pytest.raises(OptionError, match=r"'foo'.*valid options: none"):
        encodings.build("alibi", ctx(), {"foo": 1})


@pytest.mark.parametrize("value", [-5, 1.0, 0, "abc", float("nan"), float("inf")])
def test_out_of_range_option_is_rejected(value):
    with pytest.raises(OptionError, match=r"base.*valid: float in \(1, inf\)"):
        encodings.build("rope", ctx(), {"base": value})


def test_valid_options_are_applied():
    pe = encodings.build("rope", ctx(d_model=8, n_heads=2), {"base": "100"})
    assert pe.opts == {"base": 100.0}
    assert encodings.build("rope", ctx()).opts == {"base": 10000.0}
    assert encodings.build("learned", ctx(), {"init_std": 0.1}).opts == {"init_std": 0.1}


def test_parse_assignments():
    assert parse_assignments("a=1,b=x") == {"a": "1", "b": "x"}
    assert parse_assignments(" a = 1 , b=x=y ,") == {"a": "1", "b": "x=y"}
    assert parse_assignments("") == {}
    assert parse_assignments(None) == {}
    with pytest.raises(OptionError, match="'oops'.*name=value"):
        parse_assignments("a=1,oops")
    with pytest.raises(OptionError, match="name=value"):
        parse_assignments("=5")


def test_resolve_and_option_ranges():
    declared = {
        "k": Option(3, "k", type=int, low=1, high=8),
        "flag": Option(False, "f", type=bool),
        "mode": Option("a", "m", type=str, choices=("a", "b")),
    }
    assert resolve("t", declared, None) == {"k": 3, "flag": False, "mode": "a"}
    assert resolve("t", declared, {"k": "8", "flag": "true", "mode": "b"}) == {"k": 8, "flag": True, "mode": "b"}
    with pytest.raises(OptionError, match=r"k=9.*int in \[1, 8\]"):
        resolve("t", declared, {"k": 9})
    with pytest.raises(OptionError, match=r"k='2.5'.*not a int"):
        resolve("t", declared, {"k": "2.5"})
    with pytest.raises(OptionError, match="k=2.5"):
        resolve("t", declared, {"k": 2.5})
    with pytest.raises(OptionError, match="flag"):
        resolve("t", declared, {"flag": "maybe"})
    with pytest.raises(OptionError, match="one of 'a', 'b'"):
        resolve("t", declared, {"mode": "c"})


def test_default_layers_is_the_depth_unless_layers_is_given():
    """An encoding's ``default_layers`` is its models' depth when ``--layers`` is not given; an explicit ``--layers``
    wins; other encodings keep the global default. NoPE asks for 6 blocks: it has to derive positions through causal
    attention first (Kazemnejad et al. 2023, Theorem 1: one layer recovers absolute positions from the causal mask),
    then use them (measured in docs/encodings.md)."""
    from pebench.engine.runner import Case, Runner
    from pebench.engine.settings import Settings

    assert encodings.get("nope").default_layers == 6 and encodings.get("rope").default_layers is None
    default, explicit = Settings(device="cpu"), Settings(n_layers=3, device="cpu")
    assert default.layers_for("nope") == 6 and default.layers_for("rope") == ModelConfig.n_layers == 2
    assert explicit.layers_for("nope") == explicit.layers_for("rope") == 3
    runner = Runner(default)
    for name, depth in (("nope", 6), ("rope", 2)):
        case = Case(name, "copy", 12)
        assert len(runner.build_model(case).blocks) == depth
        assert runner.describe(case)["model"]["n_layers"] == depth  # stored with every result, so never mixed
    assert Runner(explicit).model_key(Case("nope", "copy", 12)) != runner.model_key(Case("nope", "copy", 12))
