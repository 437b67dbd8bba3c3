"""HoPE and FoPE (issue 32): two rotary encodings that drop RoPE's frequencies whose period is longer than the
training length L. Each is tested on the property that defines it, from its paper's formula with the numbers worked
out by hand in the comments (checked with a pocket calculator's sin and cos), never from pebench's own output."""

from __future__ import annotations

import math

import pytest
import torch

from pebench import encodings
from pebench.encodings import EncodingContext
from pebench.encodings.fope import FoPE, fope_pairs
from pebench.encodings.hope import HoPE, hope_kept
from pebench.errors import OptionError, PebenchError
from pebench.models.transformer import ModelConfig, Transformer
from pebench.testing import PASS, SKIP, check_encoding

# RoPE at head_dim 16, base 10000: θ_i = 10000^(-2i/16) = 10^(-i/2), i = 0..7
ROPE16 = [1.0, 0.316227766, 0.1, 0.0316227766, 0.01, 0.00316227766, 0.001, 0.000316227766]
# the floor 2π/L: L = 64 -> 0.0981748 (θ_0..θ_2 reach it: 0.1 >= 0.0982), L = 60 -> 0.1047198 (θ_2 = 0.1 does not),
# L = 7 -> 0.8975979 (θ_0 only), L = 6 -> 1.0471976 (none: even θ_0 = 1 turns less than once in 6 tokens)


def ctx(head_dim: int = 16, heads: int = 2, layers: int = 2, train_length: int = 64) -> EncodingContext:
    return EncodingContext(d_model=head_dim * heads, n_heads=heads, n_layers=layers, max_len=512,
                           train_length=train_length)  # fmt: skip


def qk(head_dim: int, length: int = 6, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(2, 2, length, head_dim, generator=gen), torch.randn(2, 2, length, head_dim, generator=gen)


def rotated_by_hand(x: torch.Tensor, positions: list[int], thetas: list[float]) -> torch.Tensor:
    """Pair i = (x_{2i}, x_{2i+1}) at position m turned by m·θ_i with RoPE's 2x2 rotation (Su et al., eq. 34), in
    float64; dimensions past the given θ's are copied unchanged."""
    out = x.double().clone()
    for t, m in enumerate(positions):
        for i, theta in enumerate(thetas):
            c, s = math.cos(m * theta), math.sin(m * theta)
            a, b = x[..., t, 2 * i].double(), x[..., t, 2 * i + 1].double()
            out[..., t, 2 * i], out[..., t, 2 * i + 1] = c * a - s * b, s * a + c * b
    return out


def close(actual: torch.Tensor, expected, atol: float = 1e-5) -> None:
    torch.testing.assert_close(actual.double(), torch.as_tensor(expected, dtype=torch.float64), atol=atol, rtol=1e-6)


def score(enc, q: torch.Tensor, k: torch.Tensor, t_q: int, t_k: int) -> float:
    """q at position t_q against k at position t_k after the encoding's transform in layer 0: q'·k' in head 0."""
    q, k = (x.view(1, 1, 1, -1).expand(1, enc.ctx.n_heads, 1, -1) for x in (q, k))
    q2, _ = enc.transform_qk(q, q, torch.tensor([t_q]), layer=0)
    _, k2 = enc.transform_qk(k, k, torch.tensor([t_k]), layer=0)
    return float((q2[:, 0].double() * k2[:, 0].double()).sum())


# -- HoPE (Chen et al. 2025): RoPE on the pairs that turn at least once within L, the others never turn -------------


def test_hope_keeps_the_pairs_whose_wavelength_fits_the_training_length():
    assert hope_kept(16, 10000.0, 64).tolist() == [True] * 3 + [False] * 5
    assert hope_kept(16, 10000.0, 60).tolist() == [True] * 2 + [False] * 6
    assert hope_kept(16, 10000.0, 7).tolist() == [True] + [False] * 7
    assert not hope_kept(16, 10000.0, 6).any()
    # the cut follows L = the task's training length (the model's maximum length when it is unknown)
    assert encodings.build("hope", ctx(train_length=60)).extra_config() == {"rotated_pairs": 2}
    unknown = EncodingContext(d_model=32, n_heads=2, n_layers=2, max_len=7)  # train_length 0 -> L = 7
    assert encodings.build("hope", unknown).extra_config() == {"rotated_pairs": 1}


@pytest.mark.parametrize(("length", "kept"), [(64, 3), (60, 2), (6, 0)])
def test_hope_turns_the_kept_pairs_by_ropes_angles_and_leaves_the_others(length, kept):
    enc = encodings.build("hope", ctx(train_length=length))
    q, k = qk(16)
    positions = [0, 1, 5, 63, 64, 300]
    q2, k2 = enc.transform_qk(q, k, torch.tensor(positions), layer=1)
    close(q2, rotated_by_hand(q, positions, ROPE16[:kept]))
    close(k2, rotated_by_hand(k, positions, ROPE16[:kept]))
    r = 2 * kept
    assert torch.equal(q2[..., r:], q[..., r:]) and torch.equal(k2[..., r:], k[..., r:])


def test_hope_scores_depend_on_the_distance_only():
    enc = encodings.build("hope", ctx())
    # q = k = e_0 + e_6: pair 0 turns at θ_0 = 1, pair 3 (dims 6, 7) is never turned, so q'·k' = cos(t_q - t_k) + 1:
    # at distance 2: cos 2 + 1 = -0.4161468 + 1 = 0.5838532, whatever the two positions
    e = torch.zeros(16)
    e[0] = e[6] = 1.0
    for t_q, t_k in ((2, 0), (9, 7), (1002, 1000)):
        assert score(enc, e, e, t_q, t_k) == pytest.approx(0.5838532, abs=1e-6)
    # RoPE turns pair 3 too: cos 2 + cos(2·0.0316228) = -0.4161468 + 0.9980007 = 0.5818539
    assert score(encodings.build("rope", ctx()), e, e, 9, 7) == pytest.approx(0.5818539, abs=1e-6)
    q, k = qk(16, length=1, seed=3)
    q, k = q[0, 0, 0], k[0, 0, 0]
    for shift in (1, 37, 1000):
        assert score(enc, q, k, 11 + shift, 4 + shift) == pytest.approx(score(enc, q, k, 11, 4), abs=1e-4)


def test_hope_has_no_long_term_decay_in_its_position_independent_pairs():
    # q = k = all ones on pairs 3..7 (dims 6..15, the pairs HoPE leaves unturned at L = 64): a pair (1, 1) against
    # itself turned by the distance Δ gives 2·cos(Δθ), so HoPE scores 2·5 = 10 at every distance, while RoPE decays:
    # at Δ = 100, 2·(cos 3.16228 + cos 1 + cos 0.316228 + cos 0.1 + cos 0.0316228)
    #           = 2·(-0.9997861 + 0.5403023 + 0.9504153 + 0.9950042 + 0.9995000) = 2·2.4854357 = 4.9708714
    ones = torch.zeros(16)
    ones[6:] = 1.0
    hope, rope = encodings.build("hope", ctx()), encodings.build("rope", ctx())
    for distance in (0, 1, 100, 10_000):
        assert score(hope, ones, ones, distance, 0) == pytest.approx(10.0, abs=1e-5)
    assert score(rope, ones, ones, 100, 0) == pytest.approx(4.9708714, abs=1e-5)


def test_hope_conforms_and_is_shift_invariant_in_the_whole_model():
    report = check_encoding(HoPE, speed=False)
    assert report.passed, "\n".join(report.lines())
    assert {p.name: p.status for p in report.properties}["shift invariance"] == PASS


# -- FoPE (Hua et al. 2025): a Fourier series per pair, the frequencies of period > L clipped to zero --------------


def test_fope_clips_the_frequencies_whose_period_exceeds_the_training_length():
    assert [fope_pairs(16, 10000.0, n) for n in (64, 60, 7, 6)] == [3, 2, 1, 0]
    enc = encodings.build("fope", ctx(layers=3, train_length=64))
    assert enc.pairs == 3 and enc.extra_config() == {"fourier_pairs": 3}
    close(enc._freq, ROPE16[:3], atol=1e-7)  # the unclipped frequencies are RoPE's own
    assert enc.cos_coef.shape == enc.sin_coef.shape == (3, 2, 3, 3)  # per layer, per head, D x D
    q, k = qk(16)
    q2, k2 = enc.transform_qk(q, k, torch.arange(6) * 17, layer=2)
    assert torch.equal(q2[..., 6:], q[..., 6:]) and torch.equal(k2[..., 6:], k[..., 6:])  # clipped pairs: f = 1
    assert not torch.allclose(q2[..., :6], q[..., :6])
    none = encodings.build("fope", ctx(train_length=6))  # every frequency clipped: no position at all
    out = none.transform_qk(q, k, torch.arange(6) + 40, layer=0)
    assert none.pairs == 0 and torch.equal(out[0], q) and torch.equal(out[1], k)


def hand_fope() -> FoPE:
    """head_dim 4, base 100: ω = (1, 0.1), both above the floor 2π/64 = 0.0982 (D = 2). Layer 0's coefficients set by
    hand, rows the frequency j and columns the pair m: pair 0 gets c_0(n) = cos n + 0.5·cos 0.1n and
    s_0(n) = sin n - 0.25·sin 0.1n, pair 1 stays RoPE's (cos 0.1n, sin 0.1n)."""
    enc = encodings.build("fope", EncodingContext(d_model=4, n_heads=1, n_layers=1, max_len=128, train_length=64),
                          {"base": 100.0})  # fmt: skip
    assert enc.pairs == 2
    with torch.no_grad():
        enc.cos_coef[0, 0] = torch.tensor([[1.0, 0.0], [0.5, 1.0]])
        enc.sin_coef[0, 0] = torch.tensor([[1.0, 0.0], [-0.25, 1.0]])
    return enc


def fourier_form(t_q: int, t_k: int) -> float:
    """q = e_0 at t_q against k = e_1 at t_k: q' = (c_0(t_q), s_0(t_q)), k' = (-s_0(t_k), c_0(t_k)), so
    q'·k' = s_0(t_q)c_0(t_k) - c_0(t_q)s_0(t_k), expanded over the pairs of frequencies (j, l) with C = (1, 0.5) and
    S = (1, -0.25): the two diagonal terms depend on t_q - t_k only, the cross terms (j ≠ l) do not."""
    a, b = t_q, t_k
    diagonal = math.sin(a - b) - 0.125 * math.sin(0.1 * (a - b))
    cross = (0.5 * math.sin(a) * math.cos(0.1 * b) + 0.25 * math.cos(a) * math.sin(0.1 * b)
             - 0.25 * math.sin(0.1 * a) * math.cos(b) - 0.5 * math.cos(0.1 * a) * math.sin(b))  # fmt: skip
    return diagonal + cross


def test_fope_score_is_the_fourier_series_product_worked_by_hand():
    enc = hand_fope()
    e0, e1 = torch.tensor([1.0, 0.0, 0.0, 0.0]), torch.tensor([0.0, 1.0, 0.0, 0.0])
    # (3, 1): c_0(3) = cos 3 + 0.5 cos 0.3 = -0.9899925 + 0.4776682 = -0.5123243
    #         s_0(3) = sin 3 - 0.25 sin 0.3 = 0.1411200 - 0.0738801 = 0.0672399
    #         c_0(1) = cos 1 + 0.5 cos 0.1 = 0.5403023 + 0.4975021 = 1.0378044
    #         s_0(1) = sin 1 - 0.25 sin 0.1 = 0.8414710 - 0.0249583 = 0.8165127
    #         q'·k' = 0.0672399·1.0378044 + 0.5123243·0.8165127 = 0.0697818 + 0.4183194 = 0.4881011
    # (13, 11), the same distance: c_0(13) = 0.9074468 + 0.1337494 = 1.0411962, s_0(13) = 0.4201670 - 0.2408896
    #         = 0.1792775, c_0(11) = 0.0044257 + 0.2267981 = 0.2312238, s_0(11) = -0.9999902 - 0.2228018 = -1.2227920
    #         q'·k' = 0.1792775·0.2312238 + 1.0411962·1.2227920 = 0.0414532 + 1.2731665 = 1.3146196
    for (t_q, t_k), by_hand in (((3, 1), 0.4881011), ((13, 11), 1.3146196)):
        assert score(enc, e0, e1, t_q, t_k) == pytest.approx(by_hand, abs=2e-6)
        assert score(enc, e0, e1, t_q, t_k) == pytest.approx(fourier_form(t_q, t_k), abs=2e-6)
    # not shift-invariant: one distance, two scores (only the diagonal sin 2 - 0.125 sin 0.2 = 0.8844637 is common)
    assert abs(score(enc, e0, e1, 13, 11) - score(enc, e0, e1, 3, 1)) > 0.8
    # pair 1 is still RoPE at ω = 0.1: e_2 against e_3 at distance 2 gives sin(0.2) = 0.1986693 at any positions
    e2, e3 = torch.tensor([0.0, 0.0, 1.0, 0.0]), torch.tensor([0.0, 0.0, 0.0, 1.0])
    assert score(enc, e2, e3, 3, 1) == pytest.approx(0.1986693, abs=1e-6)
    assert score(enc, e2, e3, 103, 101) == pytest.approx(0.1986693, abs=1e-5)


def test_fope_with_identity_coefficients_is_clipped_rope_and_shift_invariant():
    enc = encodings.build("fope", ctx(), {"sigma": 0.0})
    assert torch.equal(enc.cos_coef, torch.eye(3).expand(2, 2, 3, 3)) and torch.equal(enc.sin_coef, enc.cos_coef)
    q, k = qk(16)
    positions = [0, 2, 7, 64, 65, 400]
    q2, k2 = enc.transform_qk(q, k, torch.tensor(positions), layer=0)
    close(q2, rotated_by_hand(q, positions, ROPE16[:3]))  # = HoPE at the same L: RoPE on the first 3 pairs
    close(k2, rotated_by_hand(k, positions, ROPE16[:3]))
    e0, e1 = torch.zeros(16), torch.zeros(16)
    e0[0], e1[1] = 1.0, 1.0
    for t_q, t_k in ((3, 1), (13, 11), (503, 501)):  # -cos 3 sin 1 + sin 3 cos 1 = sin 2 = 0.9092974
        assert score(enc, e0, e1, t_q, t_k) == pytest.approx(0.9092974, abs=1e-5)


def test_fope_coefficients_default_to_the_authors_fixed_identity_plus_xavier_noise():
    # head_dim 64, 8 heads, L = 512 (the released 60M configuration): θ_i = 10000^(-i/32) >= 2π/512 = 0.0122718 for
    # i <= 32·ln(81.49)/ln(10000) = 15.29, so D = 16; xavier-normal on (8, 16, 16): fan_in = 16·16, fan_out = 8·16,
    # std = 0.3·√(2/(256 + 128)) = 0.3·0.0721688 = 0.0216506
    torch.manual_seed(0)
    enc = encodings.build("fope", ctx(head_dim=64, heads=8, layers=4, train_length=512))
    assert enc.pairs == 16 and enc.opts["sigma"] == 0.3 and enc.opts["learnable"] is False
    noise = torch.cat([(enc.cos_coef - torch.eye(16)).flatten(), (enc.sin_coef - torch.eye(16)).flatten()])
    assert noise.numel() == 2 * 4 * 8 * 16 * 16 and noise.std().item() == pytest.approx(0.0216506, rel=0.03)
    assert abs(noise.mean().item()) < 0.001
    assert not torch.equal(enc.cos_coef[0], enc.cos_coef[1]) and not torch.equal(enc.cos_coef[0, 0], enc.cos_coef[0, 1])
    # fixed: buffers in the state dict, no parameters, no gradient
    assert list(enc.parameters()) == [] and {"cos_coef", "sin_coef"} <= set(enc.state_dict())
    # learnable=true: the same tensors as parameters that train
    learned = encodings.build("fope", ctx(), {"learnable": "true"})
    assert {n for n, _ in learned.named_parameters()} == {"cos_coef", "sin_coef"}
    q, k = qk(16)
    q2, k2 = learned.transform_qk(q, k, torch.arange(6), layer=1)
    (q2 * k2).sum().backward()
    assert learned.cos_coef.grad[1].abs().sum() > 0 and learned.cos_coef.grad[0].abs().sum() == 0


def test_fope_is_not_shift_invariant_in_the_whole_model_unless_its_coefficients_are_the_identity():
    x = torch.randint(0, 17, (2, 16), generator=torch.Generator().manual_seed(1))
    cfg = ModelConfig(vocab_size=17, d_model=32, n_layers=2, n_heads=2)
    diffs = {}
    for sigma in (0.0, 0.3):
        torch.manual_seed(0)
        model = Transformer(cfg, encodings.build("fope", ctx(), {"sigma": sigma})).eval()
        with torch.no_grad():
            base, shifted = model(x, torch.arange(16)), model(x, torch.arange(16) + 37)
        diffs[sigma] = ((shifted - base).abs().max() / base.abs().max()).item()
    # relative to the largest logit, as the conformance kit measures (it passes shift invariance up to 1e-5)
    assert diffs[0.0] < 1e-6 and diffs[0.3] > 1e-4, diffs


def test_fope_conforms_and_declares_it_is_not_shift_invariant():
    report = check_encoding(FoPE, speed=False)
    assert report.passed, "\n".join(report.lines())
    assert {p.name: p.status for p in report.properties}["shift invariance"] == SKIP


# -- bad options: one line naming the option and the valid range ---------------------------------------------------


@pytest.mark.parametrize(
    ("name", "options", "message"),
    [
        ("hope", {"base": 1.0}, "encoding hope: option base=1.0 is out of range; valid: float in (1, inf)"),
        ("hope", {"length": 64}, "encoding hope: unknown option 'length'; valid options: base"),
        ("fope", {"sigma": -0.1}, "encoding fope: option sigma=-0.1 is out of range; valid: float in [0, inf)"),
        ("fope", {"learnable": "maybe"}, "encoding fope: option learnable='maybe' is not a bool; valid: any bool"),
    ],
)  # fmt: skip
def test_bad_options_are_one_line_errors(name, options, message):
    with pytest.raises(OptionError) as err:
        encodings.build(name, ctx(), options)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)
    assert isinstance(err.value, PebenchError)
