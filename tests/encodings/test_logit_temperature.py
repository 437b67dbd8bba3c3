"""Encodings that rescale each query row's attention logits (issue 32), tested from their definitions with the
numbers worked out by hand in the comments, never from pebench's own output:

* ``ssmax_<X>``, Scalable-Softmax (Nakanishi 2025, arXiv:2501.19399, §2): softmax((s·log n)·z) with n = i + 1
  keys for query row i, s learned per layer and head, z the whole softmax input (scores and the base's bias);
* ``irope``, Llama 4's iRoPE with attention temperature tuning (Hugging Face ``modeling_llama4.py``): RoPE, NoPE in
  every 4th block, and there q times log(floor((p + 1) / floor_scale) + 1)·attn_scale + 1.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from pebench import encodings
from pebench.encodings import EncodingContext
from pebench.encodings.irope import temperature
from pebench.encodings.registry import wrappable
from pebench.encodings.ssmax import log_counts, ssmax_bases
from pebench.errors import OptionError, UnknownNameError
from pebench.models.attention import causal_mask
from pebench.models.transformer import Attention, ModelConfig, Transformer

VOCAB, D, HEADS, LAYERS, T = 17, 32, 4, 2, 12


def ctx(d_model: int = D, heads: int = HEADS, layers: int = LAYERS) -> EncodingContext:
    return EncodingContext(d_model=d_model, n_heads=heads, n_layers=layers, max_len=64, train_length=32)


def make_model(name: str, options: dict | None = None, layers: int = LAYERS, seed: int = 0) -> Transformer:
    """A small model whose q, k, v projections are 8x their initial size, so its attention is far from uniform."""
    torch.manual_seed(seed)
    cfg = ModelConfig(vocab_size=VOCAB, d_model=D, n_layers=layers, n_heads=HEADS)
    model = Transformer(cfg, encodings.build(name, ctx(layers=layers), options)).eval()
    with torch.no_grad():
        for block in model.blocks:
            block.attn.qkv.weight.mul_(8.0)
    return model


def tokens(batch: int = 2, length: int = T, seed: int = 1) -> torch.Tensor:
    return torch.randint(0, VOCAB, (batch, length), generator=torch.Generator().manual_seed(seed))


def weights_of(enc, q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor, layer: int = 0) -> torch.Tensor:
    """softmax of one layer's scores from the encoding's hooks, as the model computes them (with the causal mask)."""
    q, k = enc.transform_qk(q, k, positions, layer)
    scores = q @ k.transpose(-1, -2) * enc.attn_scale
    bias = enc.attn_bias(q, k, positions, layer)
    if bias is not None:
        scores = scores + bias
    return scores.masked_fill(~causal_mask(q.shape[-2], q.device), float("-inf")).softmax(-1)


# -- SSMax ----------------------------------------------------------------------------------------------------------


def test_ssmax_weights_are_softmax_of_s_log_n_times_z_by_hand():
    # head width 2, attn_scale 1/√2; q_i = (1, 0) and k_j = (√2·j, 0) give the logits z_ij = j for j <= i
    enc = encodings.build("ssmax_nope", ctx(d_model=4, heads=2, layers=1), {"s_init": 1.0})
    with torch.no_grad():
        enc.s[0, 1] = 0.5  # head 0: s = 1, head 1: s = 0.5
    q = torch.tensor([1.0, 0.0]).expand(1, 2, 3, 2)
    k = torch.tensor([[0.0, 0.0], [math.sqrt(2), 0.0], [2 * math.sqrt(2), 0.0]]).expand(1, 2, 3, 2)
    w = weights_of(enc, q, k, torch.arange(3))[0]
    # SSMax_j = n^{s·z_j} / Σ n^{s·z_l}. Head 0 (s = 1): row 1 (n = 2): 2^0, 2^1 -> (1, 2)/3; row 2 (n = 3):
    # 3^0, 3^1, 3^2 -> (1, 3, 9)/13. Head 1 (s = 1/2): row 1: (1, √2)/(1 + √2); row 2: (1, √3, 3)/(4 + √3).
    r2, r3 = math.sqrt(2), math.sqrt(3)
    expected = torch.tensor([
        [[1, 0, 0], [1 / 3, 2 / 3, 0], [1 / 13, 3 / 13, 9 / 13]],
        [[1, 0, 0], [1 / (1 + r2), r2 / (1 + r2), 0], [1 / (4 + r3), r3 / (4 + r3), 3 / (4 + r3)]],
    ])  # fmt: skip
    torch.testing.assert_close(w, expected, atol=1e-6, rtol=0)
    # plain softmax of the same logits differs: row 2 would be (1, e, e²)/(1 + e + e²) = (0.090, 0.245, 0.665)
    assert abs(w[0, 2, 2].item() - math.e**2 / (1 + math.e + math.e**2)) > 0.02


@pytest.mark.parametrize("base", ["rope", "alibi", "nope"])
def test_ssmax_rows_are_the_base_rows_raised_to_s_log_n(base):
    # softmax(f·z) = p^f / Σ p^f with p = softmax(z): a row's constant cancels. z includes the base's bias, so ALiBi's
    # weights must follow too (scaling only q·k would leave its bias unscaled and fail here). Layer 0 only: its
    # input is the same in both models.
    plain, scaled = make_model(base), make_model(f"ssmax_{base}")
    assert torch.equal(plain.head.weight, scaled.head.weight)  # the same weights from the same seed
    s = torch.tensor([[0.3, 0.5, 0.8, 1.3], [0.4, 0.6, 0.9, 1.1]])  # per layer and head
    with torch.no_grad():
        scaled.encoding.s.copy_(s)
    x = tokens()
    p, got = plain.attention_maps(x, layer=0), scaled.attention_maps(x, layer=0)
    f = s[0][:, None, None] * torch.arange(1, T + 1, dtype=torch.float32).log()[:, None]  # (H, T, 1): s_h·log(i+1)
    powered = torch.where(causal_mask(T, p.device), p.clamp_min(1e-30) ** f, torch.zeros(()))
    torch.testing.assert_close(got, powered / powered.sum(-1, keepdim=True), atol=2e-5, rtol=1e-4)
    assert (got - p).abs().max() > 0.05  # and SSMax did change them


@pytest.mark.parametrize("base", ["rope", "alibi"])
def test_ssmax_with_factor_one_is_the_base(base):
    plain = make_model(base)
    # no bias: s = 1/ln T makes the last row's factor s·ln T = 1, so that row of layer 0 is the base's
    scaled = make_model(f"ssmax_{base}", {"s_init": 1 / math.log(T)})
    x = tokens()
    torch.testing.assert_close(scaled.attention_maps(x, layer=0)[:, :, -1], plain.attention_maps(x, layer=0)[:, :, -1],
                               atol=1e-6, rtol=1e-5)  # fmt: skip
    # the bias variant with s = 0, b = 1: factor 1 in every row of every layer, so the whole model is the base
    both = make_model(f"ssmax_{base}", {"bias": True})
    with torch.no_grad():
        both.encoding.s.zero_()
        both.encoding.b.fill_(1.0)
        torch.testing.assert_close(both(x), plain(x), atol=1e-6, rtol=1e-5)


def test_ssmax_s_and_b_are_learned_per_layer_and_head():
    model = make_model("ssmax_rope", {"bias": True}).train()
    enc = model.encoding
    assert enc.s.shape == enc.b.shape == (LAYERS, HEADS) and torch.all(enc.s == 0.43) and torch.all(enc.b == 0)
    assert {"encoding.s", "encoding.b"} <= set(model.state_dict())
    assert any(p is enc.s for p in model.parameters()) and any(p is enc.b for p in model.parameters())
    x = tokens()
    loss = F.cross_entropy(model(x)[:, :-1].flatten(0, 1), x[:, 1:].flatten())
    loss.backward()
    for grad in (enc.s.grad, enc.b.grad):
        assert grad is not None and torch.isfinite(grad).all() and (grad.abs() > 0).all()  # every layer and head
    assert make_model("ssmax_rope").encoding.b is None  # no bias unless asked


def test_ssmax_n_counts_keys_not_positions():
    # n = i + 1 is the row's number of keys: shifted or per-sample positions change nothing over nope
    model = make_model("ssmax_nope")
    x = tokens()
    with torch.no_grad():
        base = model(x)
        torch.testing.assert_close(model(x, torch.arange(T) + 50), base)
        torch.testing.assert_close(model(x, torch.stack([torch.arange(T) * 3, torch.arange(T) + 7])), base)


def test_ssmax_log_n_is_float32_in_runs_and_exact_in_the_float64_probe():
    # a float32 log inside the float64 probe differed by an ulp between an AMD EPYC's and an Intel Xeon's kernels
    # (21x the probe's tolerance); in the probe's float64 it is log n to the last bits on every CPU
    assert log_counts(40, torch.device("cpu")).dtype == torch.float32
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        exact = log_counts(40, torch.device("cpu"))
    finally:
        torch.set_default_dtype(before)
    assert exact.dtype == torch.float64
    assert max(abs(v - math.log(n)) for n, v in enumerate(exact.tolist(), start=1)) <= 4.5e-16


def test_ssmax_names_and_bases():
    assert {"ssmax_rope", "ssmax_nope"} <= set(encodings.available())
    assert "ssmax_alibi" not in encodings.available() and encodings.get("ssmax_alibi").name == "ssmax_alibi"
    assert encodings.get("ssmax_alibi") is encodings.get("ssmax_alibi")
    nope_cls, rope_cls = encodings.get("ssmax_nope"), encodings.get("ssmax_rope")
    assert nope_cls.default_layers == 6 and not nope_cls.position_indexed  # NoPE's depth and blindness carry over
    assert rope_cls.position_indexed and rope_cls.family == "wrapper" and "arXiv:2501.19399" in rope_cls.paper
    assert {"nope", "rope", "alibi", "fox", "irope"} <= set(ssmax_bases())
    for bad in ("ssmax_cope", "ssmax_stick_breaking", "ssmax_abacus", "ssmax_ssmax_rope", "ssmax_randomized_rope",
                "ssmax_nosuch", "randomized_ssmax_rope"):  # fmt: skip
        with pytest.raises(UnknownNameError):
            encodings.get(bad)
    assert not any(n.startswith("ssmax_") for n in wrappable())  # wrappers are wrapped by nothing


def test_ssmax_scales_a_shared_bias_per_layer():
    enc = encodings.build("ssmax_alibi", ctx())
    assert encodings.get("alibi").bias_shared_by_layers and not enc.bias_shared_by_layers
    with torch.no_grad():
        enc.s[1] = 2 * enc.s[0]
    q = k = torch.zeros(1, HEADS, 5, D // HEADS)
    pos = torch.arange(5)
    first, second, plain = enc.attn_bias(q, k, pos, 0), enc.attn_bias(q, k, pos, 1), enc.inner.attn_bias(q, k, pos, 0)
    f = 0.43 * torch.arange(1, 6, dtype=torch.float32).log()[:, None]  # row i: 0.43·ln(i + 1)
    torch.testing.assert_close(first, plain * f, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(second, 2 * first, atol=1e-6, rtol=1e-6)
    ssmax_fox = encodings.build("ssmax_fox", ctx())
    assert ssmax_fox.attn_bias(None, None, pos, 0, hidden=torch.zeros(1, 5, D), per_key=True) is None


@pytest.mark.parametrize(("options", "message"), [
    ({"s_init": 0}, "encoding ssmax_rope: option s_init=0 is out of range; valid: float in (0, inf)"),
    ({"bias": "maybe"}, "encoding ssmax_rope: option bias='maybe' is not a bool; valid: any bool"),
])  # fmt: skip
def test_ssmax_option_errors(options, message):
    with pytest.raises(OptionError) as err:
        encodings.build("ssmax_rope", ctx(), options)
    assert str(err.value) == message


# -- iRoPE ----------------------------------------------------------------------------------------------------------


def test_irope_temperature_by_hand():
    # τ(p) = ln(floor((p + 1)/4) + 1)·0.1 + 1: p = 0..2 -> floor < 1 -> 1; p = 3..6 -> 1 + 0.1·ln 2 = 1.0693147;
    # p = 7..10 -> 1 + 0.1·ln 3 = 1.1098612; p = 11, 12 -> 1 + 0.1·ln 4 = 1.1386294
    got = temperature(torch.arange(13), 4, 0.1)
    expected = [1.0] * 3 + [1.0693147180559945] * 4 + [1.1098612288668110] * 4 + [1.1386294361119891] * 2
    assert got.shape == (13, 1)
    torch.testing.assert_close(got[:, 0], torch.tensor(expected), atol=1e-7, rtol=0)
    # Llama 4's constants (8192, 0.1): 1 up to p = 8190, then 1 + 0.1·ln 2 at 8191, 1 + 0.1·ln 3 at 16383
    ref = temperature(torch.tensor([0, 1023, 8190, 8191, 16383]), 8192, 0.1)[:, 0]
    torch.testing.assert_close(ref, torch.tensor([1, 1, 1, 1.0693147180559945, 1.1098612288668110]), atol=1e-7, rtol=0)
    # per-sample positions: (B, T) -> (B, 1, T, 1)
    per_sample = temperature(torch.tensor([[0, 3], [7, 11]]), 4, 0.1)
    assert per_sample.shape == (2, 1, 2, 1)
    torch.testing.assert_close(per_sample.flatten(), torch.tensor(expected)[[0, 3, 7, 11]], atol=1e-7, rtol=0)


@pytest.mark.parametrize(("layers", "nope_blocks"), [(4, {3}), (8, {3, 7}), (2, {1})])
def test_irope_scales_queries_in_nope_blocks_only(layers, nope_blocks):
    c = ctx(layers=layers)
    irope, rope = encodings.build("irope", c, {"floor_scale": 4}), encodings.build("rope", c)
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, HEADS, 13, D // HEADS, generator=g), torch.randn(2, HEADS, 13, D // HEADS, generator=g)
    pos = torch.arange(13)
    tau = torch.tensor([1.0] * 3 + [1 + 0.1 * math.log(2)] * 4 + [1 + 0.1 * math.log(3)] * 4
                       + [1 + 0.1 * math.log(4)] * 2)[:, None]  # fmt: skip
    for layer in range(layers):
        got_q, got_k = irope.transform_qk(q, k, pos, layer)
        if layer in nope_blocks:
            torch.testing.assert_close(got_q, q * tau, atol=1e-6, rtol=1e-6)
            assert torch.equal(got_k, k)  # keys untouched, no rotation
        else:  # RoPE blocks: bit for bit rope's
            want_q, want_k = rope.transform_qk(q, k, pos, layer)
            assert torch.equal(got_q, want_q) and torch.equal(got_k, want_k)


def test_irope_with_llama4_constants_is_rope_nope_at_pebench_lengths():
    # floor_scale 8192: τ = 1 for every position below 8191, so irope is rope_nope there, exactly
    x = tokens()
    irope, hybrid = make_model("irope", layers=4), make_model("rope_nope", layers=4)
    with torch.no_grad():
        for pos in (torch.arange(T), torch.arange(T) + 1012):  # up to position 1023
            assert torch.equal(irope(x, pos), hybrid(x, pos))
        tuned = make_model("irope", {"floor_scale": 4}, layers=4)
        assert (tuned(x) - hybrid(x)).abs().max() > 1e-3  # a small floor_scale makes the temperature act
        assert (tuned(x, torch.arange(T) + 9) - tuned(x)).abs().max() > 1e-3  # and reads absolute positions
    assert encodings.get("irope").shift_invariant is False


def test_irope_attention_matches_hugging_face_llama4():
    transformers = pytest.importorskip("transformers", minversion="5.0")
    from transformers.models.llama4 import modeling_llama4 as hf

    heads, hd, t = 2, 8, 20
    cfg = transformers.Llama4TextConfig(hidden_size=heads * hd, num_attention_heads=heads, num_key_value_heads=heads,
                                        head_dim=hd, num_hidden_layers=4, use_qk_norm=False, floor_scale=4,
                                        attn_scale=0.1, rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
                                        intermediate_size=32, intermediate_size_mlp=32)  # fmt: skip
    cfg._attn_implementation = "eager"
    assert cfg.no_rope_layers == [1, 1, 1, 0]  # block 3 is NoPE (1: RoPE), as irope's nope_every = 4
    enc = encodings.build("irope", EncodingContext(heads * hd, heads, 4, 64), {"floor_scale": 4})
    mcfg = ModelConfig(vocab_size=VOCAB, d_model=heads * hd, n_layers=4, n_heads=heads)
    x = torch.randn(1, t, heads * hd, generator=torch.Generator().manual_seed(0))
    pos = torch.arange(t)
    freqs = hf.Llama4TextRotaryEmbedding(cfg)(x, pos[None])
    mask = torch.zeros(1, 1, t, t).masked_fill(~causal_mask(t, x.device), float("-inf"))
    torch.manual_seed(0)
    for layer in (0, 3):  # a RoPE block and the NoPE block with its temperature
        theirs = hf.Llama4TextAttention(cfg, layer).eval()
        ours = Attention(mcfg, layer).eval()
        with torch.no_grad():
            ours.qkv.weight.copy_(torch.cat([theirs.q_proj.weight, theirs.k_proj.weight, theirs.v_proj.weight]))
            ours.out.weight.copy_(theirs.o_proj.weight)
            want, _ = theirs(x, freqs, mask, cache_position=pos)
            torch.testing.assert_close(ours(x, pos, enc), want, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize(("options", "message"), [
    ({"floor_scale": 0}, "encoding irope: option floor_scale=0 is out of range; valid: int in [1, inf)"),
    ({"attn_scale": -0.1}, "encoding irope: option attn_scale=-0.1 is out of range; valid: float in [0, inf)"),
])  # fmt: skip
def test_irope_option_errors(options, message):
    with pytest.raises(OptionError) as err:
        encodings.build("irope", ctx(), options)
    assert str(err.value) == message
