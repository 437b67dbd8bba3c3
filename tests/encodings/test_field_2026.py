"""The encodings of issue 15 ("the field as it stands in 2026"): p-RoPE, partial rotary, Llama 3.1 and LongRoPE
scaling, NoPE with QK-norm and the RoPE/NoPE hybrid. Each is tested on the property that defines it, from its paper's
formula with the numbers written out by hand, or against the reference implementation (Hugging Face
``transformers``, when installed), never from pebench's own output."""

from __future__ import annotations

import math

import pytest
import torch

from pebench import encodings
from pebench.encodings import EncodingContext
from pebench.encodings.nope import NoPE
from pebench.encodings.partial_rope import p_rope_pairs, rotary_width
from pebench.encodings.registry import ENCODINGS, wrappable
from pebench.encodings.rope_nope import nope_blocks
from pebench.encodings.scaled_rope import llama3_inv_freq, longrope_attention_factor, longrope_factors
from pebench.errors import OptionError, PebenchError
from pebench.models.transformer import ModelConfig, Transformer

NEW = ["p_rope", "partial_rope", "llama3", "longrope", "nope_qknorm", "rope_nope"]
ROPE8 = [1.0, 0.1, 0.01, 0.001]  # 10000^(-2i/8), i = 0..3


def ctx(head_dim: int = 8, heads: int = 2, layers: int = 2, train_length: int = 64) -> EncodingContext:
    return EncodingContext(d_model=head_dim * heads, n_heads=heads, n_layers=layers, max_len=512,
                           train_length=train_length)  # fmt: skip


def qk(head_dim: int, length: int = 6, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(2, 2, length, head_dim, generator=gen), torch.randn(2, 2, length, head_dim, generator=gen)


def rotated_by_hand(x: torch.Tensor, positions: list[int], thetas: list[float]) -> torch.Tensor:
    """Pair i = (x_{2i}, x_{2i+1}) at position m turned by m·θ_i with the 2x2 rotation matrix of Su et al. (eq. 34),
    in float64; dimensions past the given θ's are copied."""
    out = x.double().clone()
    for t, m in enumerate(positions):
        for i, theta in enumerate(thetas):
            c, s = math.cos(m * theta), math.sin(m * theta)
            a, b = x[..., t, 2 * i].double(), x[..., t, 2 * i + 1].double()
            out[..., t, 2 * i], out[..., t, 2 * i + 1] = c * a - s * b, s * a + c * b
    return out


def close(actual: torch.Tensor, expected, atol: float = 1e-6) -> None:
    torch.testing.assert_close(actual.double(), torch.as_tensor(expected, dtype=torch.float64), atol=atol, rtol=1e-6)


def test_the_new_encodings_are_registered_with_a_paper():
    for name in NEW:
        cls = encodings.get(name)
        assert cls.name == name and cls.description and cls.paper


# -- p-RoPE (Barbero et al. 2025) -----------------------------------------------------------------------------------


def test_p_rope_rotates_the_authors_count_of_pairs():
    # rope_angles = int(rope_percentage * head_dim // 2)
    assert p_rope_pairs(16, 0.75) == 6  # 12.0 // 2 = 6
    assert p_rope_pairs(32, 0.75) == 12
    assert p_rope_pairs(8, 0.3) == 1  # 2.4 // 2 = 1
    assert p_rope_pairs(16, 1.0) == 8 and p_rope_pairs(16, 0.0) == 0
    assert encodings.build("p_rope", ctx()).opts["p"] == 0.75


def test_p_rope_rotated_pairs_are_ropes_and_the_lowest_pairs_are_the_identity():
    # head_dim 16, p = 0.75: pairs 0..5 turn by m·10000^(-2i/16) as in RoPE, pairs 6 and 7 (dims 12..15) do not turn
    enc = encodings.build("p_rope", ctx(head_dim=16))
    q, k = qk(16)
    positions = [3, 4, 5, 6, 7, 40]
    q2, k2 = enc.transform_qk(q, k, torch.tensor(positions), layer=0)
    thetas = [10000 ** (-2 * i / 16) for i in range(6)]
    close(q2, rotated_by_hand(q, positions, thetas), atol=1e-5)
    close(k2, rotated_by_hand(k, positions, thetas), atol=1e-5)
    assert torch.equal(q2[..., 12:], q[..., 12:]) and torch.equal(k2[..., 12:], k[..., 12:])
    rope_q, _ = encodings.build("rope", ctx(head_dim=16)).transform_qk(q, k, torch.tensor(positions), layer=0)
    torch.testing.assert_close(q2[..., :12], rope_q[..., :12])


def test_p_rope_at_p_1_is_rope_and_at_p_0_turns_nothing():
    q, k = qk(8)
    pos = torch.arange(6) + 11
    rope = encodings.build("rope", ctx()).transform_qk(q, k, pos, layer=0)
    full = encodings.build("p_rope", ctx(), {"p": 1.0}).transform_qk(q, k, pos, layer=0)
    none = encodings.build("p_rope", ctx(), {"p": 0.0}).transform_qk(q, k, pos, layer=0)
    assert all(torch.equal(a, b) for a, b in zip(full, rope, strict=True))
    assert torch.equal(none[0], q) and torch.equal(none[1], k)


# -- partial rotary (GPT-NeoX rotary_pct) ---------------------------------------------------------------------------


def test_partial_rope_rotates_the_first_quarter_with_frequencies_for_that_width():
    # head_dim 16, fraction 0.25: r = 4 dims, θ_i = 10000^(-2i/4) = (1, 0.01); dims 4..15 pass through
    assert rotary_width(16, 0.25) == 4 and rotary_width(32, 0.3) == 8 and rotary_width(8, 0.25) == 2
    enc = encodings.build("partial_rope", ctx(head_dim=16))
    close(enc._inv_freq, [1.0, 0.01])
    q, k = qk(16)
    positions = [0, 1, 2, 9, 100, 250]
    q2, k2 = enc.transform_qk(q, k, torch.tensor(positions), layer=0)
    close(q2, rotated_by_hand(q, positions, [1.0, 0.01]), atol=1e-5)
    close(k2, rotated_by_hand(k, positions, [1.0, 0.01]), atol=1e-5)
    assert torch.equal(q2[..., 4:], q[..., 4:])


def test_partial_rope_at_fraction_1_is_rope():
    q, k = qk(8)
    pos = torch.arange(6) * 3
    ours = encodings.build("partial_rope", ctx(), {"fraction": 1.0}).transform_qk(q, k, pos, layer=0)
    rope = encodings.build("rope", ctx()).transform_qk(q, k, pos, layer=0)
    torch.testing.assert_close(ours, rope)


def test_partial_rope_matches_gpt_neox_in_hugging_face():
    transformers = pytest.importorskip("transformers", minversion="5.0")
    from transformers.models.gpt_neox import modeling_gpt_neox as neox

    cfg = transformers.GPTNeoXConfig(hidden_size=64, num_attention_heads=2, rotary_pct=0.25,
                                     max_position_embeddings=512)  # fmt: skip
    rotary = neox.GPTNeoXRotaryEmbedding(cfg)
    enc = encodings.build("partial_rope", ctx(head_dim=32), {"fraction": 0.25})
    torch.testing.assert_close(enc._inv_freq, rotary.inv_freq.float(), atol=1e-7, rtol=1e-6)
    q, k = qk(32)
    pos = torch.tensor([[0, 5, 17, 64, 200, 511]] * 2)
    cos, sin = rotary(q, pos)
    # GPT-NeoX pairs dimension i with i + r/2 ("rotate half"), pebench pairs 2i with 2i + 1: the same rotation up to
    # a fixed permutation of the first r = 8 dimensions
    perm = torch.tensor([0, 2, 4, 6, 1, 3, 5, 7] + list(range(8, 32)))  # pebench layout -> NeoX layout
    hq, hk = neox.apply_rotary_pos_emb(q[..., perm], k[..., perm], cos, sin)
    inverse = torch.argsort(perm)
    ours = enc.transform_qk(q, k, pos, layer=0)
    torch.testing.assert_close(ours[0], hq[..., inverse], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(ours[1], hk[..., inverse], atol=1e-5, rtol=1e-5)


# -- Llama 3.1 and LongRoPE scaling (values by hand; Hugging Face's functions when installed) ----------------------

# Llama 3.1, head_dim 8, base 10000, L_orig 64, s 8, l 1, h 4: wavelengths 2π/θ = (6.28, 62.83, 628.3, 6283);
#   high-frequency bound L/h = 16, low-frequency bound L/l = 64.
#   i = 0: 6.28 < 16 -> kept, 1.  i = 2, 3: > 64 -> θ/8 = 0.00125, 0.000125.
#   i = 1: 62.83 in the band: γ = (64/(20π) - 1)/3 = (1.0185916358 - 1)/3 = 0.0061972119;
#          θ' = 0.1·((1 - γ)/8 + γ) = 0.1·(0.125 + 0.875·γ) = 0.0130422560
LLAMA3_8 = [1.0, 0.0130422560438, 0.00125, 0.000125]
# LongRoPE, head_dim 8, L_orig 64, s 4: ntk ramp λ_i = 4^(i/3) -> θ/λ = (1, 0.1/4^(1/3), 0.01/4^(2/3), 0.001/4);
#   attention factor sqrt(1 + ln 4 / ln 64) = sqrt(1 + 1/3) = 1.1547005384 (so q·k × 4/3)
LONG_NTK8 = [1.0, 0.0629960525, 0.0039685026, 0.00025]
LONG_A = math.sqrt(4 / 3)


def test_llama3_reference_values():
    close(llama3_inv_freq(8, 10000.0, 8.0, 64), LLAMA3_8)
    close(llama3_inv_freq(8, 10000.0, 1.0, 64), ROPE8)  # s = 1: RoPE
    enc = encodings.build("llama3", ctx(), {"mode": "train"})
    assert enc.opts["factor"] == 8.0 and enc.opts["low_freq_factor"] == 1.0 and enc.opts["high_freq_factor"] == 4.0
    close(enc._inv_freq, LLAMA3_8)
    assert enc.attention_factor == 1.0


def test_llama3_eval_mode_is_rope_in_training_and_scales_from_the_evaluation_length():
    enc = encodings.build("llama3", ctx())
    close(enc._inv_freq, ROPE8)
    enc.configure_eval(64, 512)  # s = 512 / 64 = 8, L_orig = 64
    close(enc._inv_freq, LLAMA3_8)
    enc.configure_eval(64, 64)
    close(enc._inv_freq, ROPE8)


def test_longrope_reference_values_and_modes():
    assert longrope_attention_factor(4.0, 64) == pytest.approx(LONG_A, abs=1e-12)
    assert longrope_attention_factor(1.0, 64) == 1.0
    close(longrope_factors("ntk", 8, 4.0), [1.0, 4 ** (1 / 3), 4 ** (2 / 3), 4.0])
    enc = encodings.build("longrope", ctx())  # eval mode: RoPE in training
    close(enc._inv_freq, ROPE8)
    assert enc.attention_factor == 1.0
    enc.configure_eval(64, 256)  # longer than L_orig = 64: long factors at s = 4
    close(enc._inv_freq, LONG_NTK8)
    assert enc.attention_factor == pytest.approx(LONG_A)
    enc.configure_eval(64, 64)
    close(enc._inv_freq, ROPE8)
    assert enc.attention_factor == 1.0
    # train mode: s = factor throughout, short factors within L_orig, long ones beyond; explicit factors as given
    enc = encodings.build("longrope", ctx(), {"mode": "train", "factor": 4.0, "long_factor": "1;2;4;8"})
    close(enc._inv_freq, ROPE8)
    assert enc.attention_factor == pytest.approx(LONG_A)
    enc.configure_eval(64, 128)
    close(enc._inv_freq, [1.0, 0.05, 0.0025, 0.000125])


@pytest.mark.parametrize("name", ["longrope", "yarn"])
def test_attention_factor_scales_the_logits_by_its_square(name):
    enc = encodings.build(name, ctx(), {"mode": "train", "factor": 4.0})
    q = torch.zeros(1, 1, 1, 8)
    q[..., 3] = 1.0
    q2, k2 = enc.transform_qk(q, q, torch.tensor([9]), layer=0)
    expected = 4 / 3 if name == "longrope" else (0.1 * math.log(4) + 1) ** 2
    assert (q2 * k2).sum().item() == pytest.approx(expected, rel=1e-6)


class HFConfig:
    """The attributes Hugging Face's ``modeling_rope_utils`` reads from a model configuration, in both its layouts
    (``rope_parameters`` with ``standardize_rope_params`` in 5.x; ``rope_theta`` and ``rope_scaling`` before)."""

    def __init__(self, head_dim: int, base: float, max_position: int, **params) -> None:
        self.hidden_size, self.num_attention_heads, self.head_dim = 4 * head_dim, 4, head_dim
        self.rope_theta, self.max_position_embeddings = base, max_position
        self.rope_parameters = {"rope_theta": base, **params}
        self.rope_scaling = self.rope_parameters
        if "original_max_position_embeddings" in params:
            self.original_max_position_embeddings = params["original_max_position_embeddings"]

    def standardize_rope_params(self) -> None:
        pass


@pytest.mark.parametrize(("head_dim", "original", "factor"), [(32, 512, 8.0), (64, 64, 4.0), (16, 2048, 2.5)])
def test_llama3_matches_hugging_face(head_dim, original, factor):
    rope_utils = pytest.importorskip("transformers.modeling_rope_utils")
    cfg = HFConfig(head_dim, 10000.0, int(original * factor), rope_type="llama3", factor=factor, low_freq_factor=1.0,
                   high_freq_factor=4.0, original_max_position_embeddings=original)  # fmt: skip
    inv_freq, attention = rope_utils._compute_llama3_parameters(cfg, "cpu")
    c = ctx(head_dim=head_dim, train_length=original)
    enc = encodings.build("llama3", c, {"mode": "train", "factor": factor})
    torch.testing.assert_close(enc._inv_freq, inv_freq.float(), atol=1e-6, rtol=1e-6)
    assert enc.attention_factor == attention == 1.0
    enc = encodings.build("llama3", c)  # eval mode at factor x the training length
    enc.configure_eval(original, int(original * factor))
    torch.testing.assert_close(enc._inv_freq, inv_freq.float(), atol=1e-6, rtol=1e-6)


def test_longrope_matches_hugging_face():
    # transformers 4.x chose short or long factors from max_position_embeddings inside this function (and switched
    # at run time elsewhere); from 5.0 it uses the sequence length, as pebench does
    pytest.importorskip("transformers", minversion="5.0")
    from transformers import modeling_rope_utils as rope_utils
    short = [1.0, 1.05, 1.1, 1.2, 1.3, 1.5, 1.8, 2.0]
    long = [1.0, 1.5, 2.0, 3.0, 5.0, 8.0, 12.0, 16.0]
    cfg = HFConfig(16, 10000.0, 256, rope_type="longrope", factor=4.0, short_factor=short, long_factor=long,
                   original_max_position_embeddings=64)  # fmt: skip
    hf_short, hf_a = rope_utils._compute_longrope_parameters(cfg, "cpu", seq_len=64)
    hf_long, hf_a_long = rope_utils._compute_longrope_parameters(cfg, "cpu", seq_len=256)
    options = {"mode": "train", "factor": 4.0, "short_factor": ";".join(map(str, short)), "long_factor": str(long)}
    enc = encodings.build("longrope", ctx(head_dim=16, train_length=64), options)
    torch.testing.assert_close(enc._inv_freq, hf_short.float(), atol=1e-6, rtol=1e-6)
    assert enc.attention_factor == pytest.approx(hf_a, abs=1e-7) and hf_a == hf_a_long
    enc.configure_eval(64, 256)
    torch.testing.assert_close(enc._inv_freq, hf_long.float(), atol=1e-6, rtol=1e-6)
    # eval mode with the default ntk ramp is HF's LongRoPE given the ramp s^(2i/(d-2)) as its long factors
    ramp = [4.0 ** (i / 7) for i in range(8)]
    cfg = HFConfig(16, 10000.0, 256, rope_type="longrope", factor=4.0, short_factor=[1.0] * 8, long_factor=ramp,
                   original_max_position_embeddings=64)  # fmt: skip
    hf_ramp, hf_a = rope_utils._compute_longrope_parameters(cfg, "cpu", seq_len=256)
    enc = encodings.build("longrope", ctx(head_dim=16, train_length=64))
    enc.configure_eval(64, 256)
    torch.testing.assert_close(enc._inv_freq, hf_ramp.float(), atol=1e-6, rtol=1e-6)
    assert enc.attention_factor == pytest.approx(hf_a, abs=1e-7)


# -- NoPE with QK-norm ----------------------------------------------------------------------------------------------


def test_qk_norm_outputs_have_unit_rms_times_the_learned_gain():
    enc = encodings.build("nope_qknorm", ctx(head_dim=16))
    gen = torch.Generator().manual_seed(3)
    with torch.no_grad():
        enc.q_gain.copy_(torch.rand(2, 16, generator=gen) + 0.5)
        enc.k_gain.copy_(torch.rand(2, 16, generator=gen) + 0.5)
    q, k = qk(16)
    q, k = 7 * q, 0.01 * k  # sizes the normalisation must remove
    for layer in (0, 1):
        q2, k2 = enc.transform_qk(q, k, torch.arange(6), layer=layer)
        for x, y, gain in ((q, q2, enc.q_gain[layer]), (k, k2, enc.k_gain[layer])):
            unit = y.double() / gain.detach().double()
            rms = unit.pow(2).mean(-1).sqrt()
            # x / sqrt(mean(x²) + ε), ε = 1e-6: RMS exactly sqrt(ms / (ms + ε)), within 1e-6 of 1 once ms > 0.5
            # (the small keys, ms ~ 1e-4, show the ε: RMS about 0.995)
            ms = x.double().pow(2).mean(-1)
            close(rms, (ms / (ms + 1e-6)).sqrt())
            assert ((rms - 1).abs() < 1e-6)[ms > 0.5].all() and (x is k or bool((ms > 0.5).all()))
            close(unit, x.double() / (ms[..., None] + 1e-6).sqrt(), atol=1e-5)


def test_qk_norm_ignores_positions_in_the_transform_and_in_the_whole_model():
    enc = encodings.build("nope_qknorm", ctx())
    q, k = qk(8)
    base = enc.transform_qk(q, k, torch.arange(6), layer=1)
    for pos in (torch.arange(6) + 100, torch.tensor([[5, 1, 9, 2, 7, 3], [0, 0, 0, 0, 0, 0]])):
        assert all(torch.equal(a, b) for a, b in zip(enc.transform_qk(q, k, pos, layer=1), base, strict=True))
    torch.manual_seed(0)
    model = Transformer(ModelConfig(vocab_size=11, d_model=16, n_layers=2, n_heads=2), enc).eval()
    x = torch.randint(0, 11, (2, 6), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        torch.testing.assert_close(model(x, torch.arange(6) + 37), model(x, torch.arange(6)), atol=0, rtol=0)


def test_qk_norm_is_like_nope_in_its_capabilities_and_learns_its_gains():
    cls = encodings.get("nope_qknorm")
    assert cls.position_indexed is False and cls.default_layers == NoPE.default_layers
    assert "nope_qknorm" not in wrappable() and "randomized_nope_qknorm" not in ENCODINGS
    enc = encodings.build("nope_qknorm", ctx(layers=3))
    assert enc.q_gain.shape == enc.k_gain.shape == (3, 8) and bool((enc.q_gain == 1).all())
    q, k = qk(8)
    q2, k2 = enc.transform_qk(q, k, torch.arange(6), layer=2)
    (q2 * k2).sum().backward()
    assert enc.q_gain.grad[2].abs().sum() > 0 and enc.q_gain.grad[:2].abs().sum() == 0


# -- RoPE / NoPE hybrid (Yang et al. 2025) --------------------------------------------------------------------------


def test_hybrid_blocks_follow_the_one_in_k_rule():
    assert nope_blocks(4, 4) == (3,) and nope_blocks(8, 4) == (3, 7) and nope_blocks(6, 4) == (3,)
    assert nope_blocks(6, 2) == (1, 3, 5)
    # fewer blocks than k: the last block is NoPE (the default 2 blocks: RoPE, then NoPE); one block: RoPE
    assert nope_blocks(2, 4) == (1,) and nope_blocks(3, 4) == (2,) and nope_blocks(1, 4) == ()


def test_hybrid_matches_hugging_faces_no_rope_layers():
    transformers = pytest.importorskip("transformers")
    if not hasattr(transformers, "SmolLM3Config"):
        pytest.skip("this transformers has no SmolLM3")
    for layers in (4, 8, 12, 36):
        uses_rope = transformers.SmolLM3Config(num_hidden_layers=layers, no_rope_layer_interval=4).no_rope_layers
        assert tuple(i for i, r in enumerate(uses_rope) if not r) == nope_blocks(layers, 4)


@pytest.mark.parametrize("layers", [2, 8])
def test_hybrid_rope_blocks_equal_rope_and_nope_blocks_the_identity(layers):
    enc = encodings.build("rope_nope", ctx(layers=layers))
    rope = encodings.build("rope", ctx(layers=layers))
    q, k = qk(8)
    pos = torch.arange(6) + 4
    expected_nope = {1} if layers == 2 else {3, 7}
    for layer in range(layers):
        got = enc.transform_qk(q, k, pos, layer)
        want = (q, k) if layer in expected_nope else rope.transform_qk(q, k, pos, layer)
        assert all(torch.equal(a, b) for a, b in zip(got, want, strict=True)), layer
    assert enc.extra_config() == {"nope_blocks": sorted(expected_nope)}


# -- bad options: one line naming the option and the valid range ---------------------------------------------------


@pytest.mark.parametrize(
    ("name", "options", "message"),
    [
        ("p_rope", {"p": 1.5}, "encoding p_rope: option p=1.5 is out of range; valid: float in [0, 1]"),
        ("partial_rope", {"fraction": 0}, "encoding partial_rope: option fraction=0 is out of range; valid: float in"),
        ("partial_rope", {"fraction": 0.2}, "encoding partial_rope: option fraction=0.2 rotates no pair of a "
                                            "8-dimensional head; valid: float in [0.25, 1]"),
        ("llama3", {"high_freq_factor": 1.0}, "encoding llama3: option high_freq_factor=1.0 must exceed"),
        ("llama3", {"factor": 0.5}, "encoding llama3: option factor=0.5 is out of range; valid: float in [1, inf)"),
        ("longrope", {"long_factor": "1;2"}, "encoding longrope: option long_factor='1;2' needs 4 positive factors"),
        ("longrope", {"short_factor": "a;b;c;d"}, "encoding longrope: option short_factor='a;b;c;d' is not a list"),
        ("longrope", {"long_factor": "1;2;-4;8"}, "encoding longrope: option long_factor='1;2;-4;8' needs 4 positive"),
        ("rope_nope", {"nope_every": 1}, "encoding rope_nope: option nope_every=1 is out of range; valid: int in [2"),
        ("nope_qknorm", {"eps": 1}, "encoding nope_qknorm: unknown option 'eps'; valid options: none"),
    ],
)  # fmt: skip
def test_bad_options_are_one_line_errors(name, options, message):
    with pytest.raises(OptionError) as err:
        encodings.build(name, ctx(), options)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)
    assert isinstance(err.value, PebenchError)
