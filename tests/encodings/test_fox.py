"""FoX, the Forgetting Transformer (Lin et al. 2025, arXiv:2503.02130), from its formula: per head a forget gate
f_t = σ(w_f·x_t + b_f) from the hidden state entering the attention, and the bias D_ij = Σ_{l=j+1}^{i} log f_l on the
scores; the references are explicit loops over the gates, never the cumulative-sum code under test."""

from __future__ import annotations

import math

import torch

from pebench import encodings
from pebench.encodings import EncodingContext
from pebench.models.transformer import ModelConfig, Transformer

VOCAB, D, HEADS, LAYERS = 17, 32, 4, 2
CTX = EncodingContext(d_model=D, n_heads=HEADS, n_layers=LAYERS, max_len=128)


def built(options: dict | None = None) -> encodings.PositionalEncoding:
    torch.manual_seed(0)
    return encodings.build("fox", CTX, options)


def test_the_bias_is_the_sum_of_log_gates_between_key_and_query():
    pe = built()
    with torch.no_grad():
        pe.gate_bias.add_(torch.randn_like(pe.gate_bias))
        pe.gate_weight.mul_(20)
    x = torch.randn(2, 7, D, generator=torch.Generator().manual_seed(1))
    layer = 1
    bias = pe.attn_bias(None, None, torch.arange(7), layer, hidden=x).detach()
    assert bias.shape == (2, HEADS, 7, 7)
    assert pe.attn_bias(None, None, torch.arange(7), layer) is None  # no part from positions or q, k
    w, b = pe.gate_weight[layer].detach(), pe.gate_bias[layer].detach()
    for batch in range(2):
        for h in range(HEADS):
            f = [1.0 / (1.0 + math.exp(-(float(w[h] @ x[batch, t]) + float(b[h])))) for t in range(7)]
            for i in range(7):
                for j in range(i + 1):
                    want = sum(math.log(f[t]) for t in range(j + 1, i + 1))
                    assert abs(float(bias[batch, h, i, j]) - want) < 1e-4, (batch, h, i, j)


def test_the_per_key_bias_differs_from_the_full_bias_by_a_constant_per_row():
    pe = built()
    with torch.no_grad():
        pe.gate_bias.add_(torch.randn_like(pe.gate_bias))
    x = torch.randn(2, 9, D, generator=torch.Generator().manual_seed(4))
    full = pe.attn_bias(None, None, torch.arange(9), 1, hidden=x).detach()
    per_key = pe.attn_bias(None, None, torch.arange(9), 1, hidden=x, per_key=True).detach()
    assert per_key.shape == (2, HEADS, 9)
    for i in range(9):  # over the visible keys j <= i, D_ij - b_j is the row's constant (c_i)
        row = full[..., i, : i + 1] - per_key[..., : i + 1]
        torch.testing.assert_close(row, row[..., :1].expand_as(row), atol=1e-5, rtol=0)


def test_a_constant_gate_is_alibi_with_slope_minus_log_f():
    pe = built()
    f = torch.tensor([0.5, 0.9, 0.99, 0.999])
    with torch.no_grad():
        pe.gate_weight.zero_()
        pe.gate_bias.copy_(torch.log(f / (1 - f)).expand(LAYERS, HEADS))  # σ(b) = f
    bias = pe.attn_bias(None, None, torch.arange(9), 0, hidden=torch.randn(3, 9, D))
    distance = (torch.arange(9)[:, None] - torch.arange(9)[None, :]).float()
    for h in range(HEADS):
        expected = -distance * (-math.log(float(f[h])))
        visible = distance >= 0
        torch.testing.assert_close(bias[:, h][:, visible], expected[visible].expand(3, -1), atol=1e-4, rtol=1e-4)


def test_initialisation_follows_the_released_code():
    pe = built()
    assert (pe.gate_bias == 0).all()  # f starts near σ(0) = 1/2
    assert 0.01 < float(pe.gate_weight.detach().std()) < 0.03
    assert (built({"bias_init": 5.0}).gate_bias == 5.0).all()
    assert sum(p.numel() for p in pe.parameters()) == LAYERS * HEADS * (D + 1)


def test_the_model_adds_the_gate_bias_in_every_layer_and_ignores_positions():
    torch.manual_seed(0)
    model = Transformer(ModelConfig(vocab_size=VOCAB, d_model=D, n_layers=LAYERS, n_heads=HEADS),
                        encodings.build("fox", CTX)).eval()
    tokens = torch.randint(0, VOCAB, (2, 10), generator=torch.Generator().manual_seed(2))
    asked = []
    original = model.encoding.log_gates

    def spy(x: torch.Tensor, layer: int) -> torch.Tensor:
        asked.append(layer)
        return original(x, layer)

    model.encoding.log_gates = spy  # type: ignore[method-assign]
    with torch.no_grad():
        before = model(tokens)
        assert asked == list(range(LAYERS))
        torch.testing.assert_close(model(tokens, torch.arange(10) + 21), before)
        model.encoding.gate_bias.fill_(8.0)  # f ≈ 1: no forgetting, so the output changes
        assert not torch.allclose(model(tokens), before)
    maps = model.attention_maps(tokens, layer=0)  # inspected maps include the bias: softmax rows with it
    torch.testing.assert_close(maps.sum(-1), torch.ones(2, HEADS, 10))
