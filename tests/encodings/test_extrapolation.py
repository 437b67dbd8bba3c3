"""RoPE extrapolation variants (yarn, pi, ntk) against values computed by hand from their papers (and Hugging Face
``modeling_rope_utils``, which YaRN must match), their two modes, and bad options."""

from __future__ import annotations

import math

import pytest
import torch

from pebench import encodings
from pebench.encodings import EncodingContext
from pebench.encodings.scaled_rope import yarn_correction_dim, yarn_correction_range, yarn_inv_freq, yarn_mscale
from pebench.engine.evaluation import eval_length, evaluate
from pebench.errors import OptionError, PebenchError
from pebench.models.transformer import ModelConfig, Transformer
from pebench.tasks import build as build_task

# head_dim 8 (d_model 32, 4 heads), base 10000, original (training) length 64, factor s = 4.
CTX8 = EncodingContext(d_model=32, n_heads=4, n_layers=2, max_len=256, train_length=64)
ROPE8 = [1.0, 0.1, 0.01, 0.001]  # 10000^(-2i/8), i = 0..3

# YaRN, head_dim 8, L_orig 64, s 4 (β_fast 32, β_slow 1):
#   dim(r) = 8·ln(64/(2π r)) / (2 ln 10000)
#   dim(32) = 8·ln(0.3183099) / 18.4206807 = -0.4971499  -> floor -1 -> max(., 0) = 0 = low
#   dim(1)  = 8·ln(10.1859164) / 18.4206807 = 1.0080001  -> ceil 2 -> min(., 7)  = 2 = high
#   ramp_i = clamp(i/2, 0, 1) = (0, 0.5, 1, 1);  keep γ = 1 - ramp = (1, 0.5, 0, 0)
#   θ'_i = θ_i/4·(1 - γ) + θ_i·γ = (1, 0.025·0.5 + 0.1·0.5, 0.01/4, 0.001/4) = (1, 0.0625, 0.0025, 0.00025)
#   attention factor 0.1·ln 4 + 1 = 1.1386294361 on cos and sin: q·k × 1.1386294361² = 1.2964769928
YARN8 = [1.0, 0.0625, 0.0025, 0.00025]
YARN8_MSCALE = 1.1386294361
# PI: θ/4.  NTK (α = 1): base' = 10000·4^(8/6); θ'_i = base'^(-2i/8) = 10^(-i)·4^(-i/3):
#   (1, 1/(10·4^(1/3)), 1/(100·4^(2/3)), 1/(1000·4)) = (1, 0.0629960525, 0.0039685026, 0.00025)
PI8 = [0.25, 0.025, 0.0025, 0.00025]
NTK8 = [1.0, 0.0629960525, 0.0039685026, 0.00025]


def close(actual: torch.Tensor, expected: list[float]) -> None:
    torch.testing.assert_close(actual.float(), torch.tensor(expected), atol=1e-9, rtol=1e-6)


def test_yarn_reference_values():
    assert yarn_correction_dim(32, 8, 10000.0, 64) == pytest.approx(-0.4971499, abs=1e-6)
    assert yarn_correction_dim(1, 8, 10000.0, 64) == pytest.approx(1.0080001, abs=1e-6)
    assert yarn_correction_range(8, 10000.0, 64) == (0, 2)
    close(yarn_inv_freq(8, 10000.0, 4.0, 64), YARN8)
    assert yarn_mscale(4.0) == pytest.approx(YARN8_MSCALE, abs=1e-9)
    assert yarn_mscale(1.0) == 1.0 and yarn_mscale(0.5) == 1.0


def test_yarn_reference_values_with_a_fractional_ramp():
    # head_dim 32, base 10000, L_orig 2048, s 8:
    #   dim(32) = 32·ln(2048/(64π))/18.4206807 = 4.0320004 -> low 4;  dim(1) = 32·ln(2048/(2π))/18.42068 = 10.0526 -> 11
    #   i = 5: ramp = (5-4)/(11-4) = 1/7, γ = 6/7; θ_5 = 10^(-1.25) = 0.0562341325;
    #   θ'_5 = θ_5·(6/7 + 1/7/8) = θ_5·49/56 = 0.0492048660.  i <= 4 keep θ_i, i >= 11 use θ_i/8.
    assert yarn_correction_range(32, 10000.0, 2048) == (4, 11)
    freq = yarn_inv_freq(32, 10000.0, 8.0, 2048)
    assert freq[5].item() == pytest.approx(0.0492048660, rel=1e-6)
    assert freq[4].item() == pytest.approx(10 ** -1.0, rel=1e-6)
    assert freq[11].item() == pytest.approx(10 ** (-22 / 8) / 8, rel=1e-6)
    assert yarn_mscale(8.0) == pytest.approx(1.2079441542, abs=1e-9)


def test_yarn_attention_factor_scales_the_logits_by_its_square():
    enc = encodings.build("yarn", CTX8, {"mode": "train", "factor": 4.0})
    close(enc._inv_freq, YARN8)
    q = torch.zeros(1, 1, 1, 8)
    q[..., 1] = 1.0
    q2, k2 = enc.transform_qk(q, q, torch.tensor([7]), layer=0)
    assert (q2 * k2).sum().item() == pytest.approx(YARN8_MSCALE**2, rel=1e-6)


@pytest.mark.parametrize(("name", "scaled"), [("yarn", YARN8), ("pi", PI8), ("ntk", NTK8)])
def test_eval_mode_is_rope_in_training_and_scales_from_the_evaluation_length(name, scaled):
    enc = encodings.build(name, CTX8)
    assert enc.opts["mode"] == "eval"
    close(enc._inv_freq, ROPE8)
    enc.configure_eval(64, 256)  # s = 256/64 = 4
    close(enc._inv_freq, scaled)
    enc.configure_eval(64, 32)  # shorter than training: s = max(1, 0.5) = 1
    close(enc._inv_freq, ROPE8)
    enc.configure_eval(64, 256)
    enc.configure_eval(64, 64)  # what the trainer calls after evaluating: back to RoPE
    close(enc._inv_freq, ROPE8)


@pytest.mark.parametrize(("name", "scaled"), [("yarn", YARN8), ("pi", PI8), ("ntk", NTK8)])
def test_train_mode_uses_the_factor_throughout(name, scaled):
    enc = encodings.build(name, CTX8, {"mode": "train", "factor": 4.0})
    close(enc._inv_freq, scaled)
    enc.configure_eval(64, 1024)
    close(enc._inv_freq, scaled)


def test_ntk_alpha_follows_the_dynamic_formula():
    # α = 2, s = 4: base' = 10000·(2·4 - 1)^(8/6) = 10000·7^(4/3); θ'_3 = base'^(-3/4) = 0.001·7^(-1) = 0.000142857
    enc = encodings.build("ntk", CTX8, {"mode": "train", "factor": 4.0, "alpha": 2.0})
    assert enc._inv_freq[3].item() == pytest.approx(0.001 / 7, rel=1e-6)


def test_eval_mode_models_match_rope_at_the_training_length_and_differ_beyond():
    task = build_task("k_back")
    x = torch.randint(0, task.vocab_size, (2, 256), generator=torch.Generator().manual_seed(3))
    attention, losses = {}, {}
    for name in ("rope", "yarn", "pi", "ntk"):
        torch.manual_seed(0)
        model = Transformer(ModelConfig(vocab_size=task.vocab_size, d_model=32, n_heads=4), encodings.build(name, CTX8))
        losses[name] = evaluate(model, task, 64, "test", 8, seed=0, device=torch.device("cpu"))["loss"]
        with torch.no_grad(), eval_length(model, 64, 256):
            attention[name] = model.attention_maps(x, layer=0)
        close(model.encoding._inv_freq, ROPE8)  # the evaluation context restored the training frequencies
    for name in ("yarn", "pi", "ntk"):
        assert losses[name] == pytest.approx(losses["rope"], rel=1e-6)
        # the scaled frequencies move the attention pattern of the first layer (same weights, same tokens)
        assert (attention[name] - attention["rope"]).abs().max() > 5e-4  # measured 1.5e-3 (ntk) to 6.4e-3 (pi)


def test_scaled_config_is_recorded():
    enc = encodings.build("yarn", CTX8)
    assert enc.opts == {"base": 10000.0, "mode": "eval", "factor": 4.0}
    assert "eval_length / train_length" in enc.extra_config()["scale_rule"]


# -- bad input: one line naming the option and the valid range ------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "options", "message"),
    [
        ("yarn", {"factor": 0.5}, "encoding yarn: option factor=0.5 is out of range; valid: float in [1, inf)"),
        ("pi", {"mode": "sometimes"}, "encoding pi: option mode='sometimes' is invalid; valid: one of 'eval', 'train'"),
        ("rope", {"base": -2}, "encoding rope: option base=-2 is out of range; valid: float in (1, inf)"),
        ("ntk", {"base": -1.0}, "encoding ntk: option base=-1.0 is out of range; valid: float in (1, inf)"),
        ("drope", {"drop_at": 0}, "encoding drope: option drop_at=0 is out of range; valid: float in (0, 1)"),
        ("drope", {"drop_at": 1.0}, "encoding drope: option drop_at=1.0 is out of range; valid: float in (0, 1)"),
        ("drope", {"drop_at": "x"}, "encoding drope: option drop_at='x' is not a float; valid: float in (0, 1)"),
        ("drope", {"base": "cope"}, "encoding drope: option base='cope' is invalid; valid: one of 'alibi', 'binary'"),
        ("yarn", {"scale": 2}, "encoding yarn: unknown option 'scale'; valid options: base, factor, mode"),
        ("alibi", {"base": 2}, "encoding alibi: unknown option 'base'; valid options: none"),
        ("randomized_rope", {"factor": 2},
         "encoding randomized_rope: unknown option 'factor'; valid options: base, eval_positions, max_position"),
        ("cope", {"npos": 1}, "encoding cope: option npos=1 is out of range; valid: int in [2, inf)"),
        ("xpos", {"scale_base": 0}, "encoding xpos: option scale_base=0 is out of range; valid: float in (0, inf)"),
    ],
)
def test_bad_options_are_one_line_errors(name, options, message):
    with pytest.raises(OptionError) as err:
        encodings.build(name, CTX8, options)
    text = str(err.value)
    assert text.startswith(message) and "\n" not in text
    assert isinstance(err.value, PebenchError)


def test_every_option_default_is_valid_and_math_is_finite():
    for name in encodings.available():
        enc = encodings.build(name, CTX8)
        for key, value in enc.opts.items():
            if isinstance(value, float):
                assert math.isfinite(value), (name, key)
