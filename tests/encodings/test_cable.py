"""CABLE (Veisi et al. 2025, arXiv:2503.08067; the formula of the authors' released code), from its formula: per head
a slope m_t = softplus(w·x_t + c) from the hidden state entering the attention, and the bias
B_ij = -Σ_{l=j+1}^{i} m_l on the scores. The expected biases are worked out by hand, never from pebench's output."""

from __future__ import annotations

import math

import pytest
import torch

from pebench import encodings
from pebench.encodings import EncodingContext
from pebench.errors import OptionError
from pebench.models.transformer import ModelConfig, Transformer
from pebench.testing import check_encoding

D, HEADS, LAYERS = 8, 2, 2
CTX = EncodingContext(d_model=D, n_heads=HEADS, n_layers=LAYERS, max_len=64)


def built(options: dict | None = None, ctx: EncodingContext = CTX) -> encodings.PositionalEncoding:
    torch.manual_seed(0)
    return encodings.build("cable", ctx, options)


def test_the_bias_of_a_hand_made_case():
    pe = built()
    layer = 1
    with torch.no_grad():
        pe.slope_weight.zero_()
        pe.slope_weight[layer, 0, 0] = 1.0  # head 0: m_t = softplus(x_t0)
        pe.slope_bias[layer, 1] = math.log(math.e - 1)  # head 1: m_t = softplus(ln(e - 1)) = ln(e) = 1
    x = torch.zeros(1, 4, D)
    x[0, :, 0] = torch.tensor([5.0, 0.0, math.log(3.0), math.log(math.e - 1)])
    # head 0: m = (softplus(5), ln 2, ln 4, 1); m_0 never enters (the sum starts after the key, l >= j + 1 >= 1)
    #   B_10 = -ln 2 = -0.693147;  B_20 = -(ln 2 + ln 4) = -ln 8 = -2.079442;  B_21 = -ln 4 = -1.386294;
    #   B_30 = -(ln 8 + 1) = -3.079442;  B_31 = -(ln 4 + 1) = -2.386294;  B_32 = -1;  B_ii = 0
    head0 = [
        [0.0, 0.0, 0.0, 0.0],
        [-0.693147, 0.0, 0.0, 0.0],
        [-2.079442, -1.386294, 0.0, 0.0],
        [-3.079442, -2.386294, -1.0, 0.0],
    ]
    # head 1: every slope 1, so B_ij = -(i - j)
    head1 = [[-(i - j) if j <= i else 0.0 for j in range(4)] for i in range(4)]
    bias = pe.attn_bias(None, None, torch.arange(4), layer, hidden=x).detach()
    assert bias.shape == (1, HEADS, 4, 4)
    visible = torch.ones(4, 4, dtype=torch.bool).tril()
    torch.testing.assert_close(bias[0, 0][visible], torch.tensor(head0)[visible], atol=1e-5, rtol=0)
    torch.testing.assert_close(bias[0, 1][visible], torch.tensor(head1, dtype=torch.float32)[visible], atol=1e-5,
                               rtol=0)  # fmt: skip


def test_a_token_independent_slope_is_alibi():
    # init=alibi starts c_h at softplus⁻¹(m_h), m_h = 2^(-8h/H) for H = 4 heads: 1/4, 1/16, 1/64, 1/256; with the
    # token-dependent part w = 0, B_ij = -m_h·(i - j), ALiBi's bias
    ctx = EncodingContext(d_model=16, n_heads=4, n_layers=LAYERS, max_len=64)
    pe = built({"init": "alibi"}, ctx)
    with torch.no_grad():
        pe.slope_weight.zero_()
    bias = pe.attn_bias(None, None, torch.arange(9), LAYERS - 1, hidden=torch.randn(3, 9, 16)).detach()
    distance = (torch.arange(9)[:, None] - torch.arange(9)[None, :]).float()
    visible = distance >= 0
    for h, m in enumerate([0.25, 0.0625, 0.015625, 0.00390625]):
        torch.testing.assert_close(bias[:, h][:, visible], (-m * distance[visible]).expand(3, -1), atol=1e-5,
                                   rtol=1e-5)  # fmt: skip


def test_the_per_key_bias_differs_from_the_full_bias_by_a_constant_per_row():
    pe = built()
    with torch.no_grad():
        pe.slope_bias.add_(torch.randn_like(pe.slope_bias))
        pe.slope_weight.mul_(30)
    x = torch.randn(2, 9, D, generator=torch.Generator().manual_seed(4))
    full = pe.attn_bias(None, None, torch.arange(9), 1, hidden=x).detach()
    per_key = pe.attn_bias(None, None, torch.arange(9), 1, hidden=x, per_key=True).detach()
    assert per_key.shape == (2, HEADS, 9)
    for i in range(9):  # over the visible keys j <= i, B_ij - b_j is the row's constant
        row = full[..., i, : i + 1] - per_key[..., : i + 1]
        torch.testing.assert_close(row, row[..., :1].expand_as(row), atol=1e-5, rtol=0)


def test_cable_is_fox_with_the_gate_sign_flipped():
    # -softplus(z) = log σ(-z): CABLE's (w, c) give FoX's bias with gates σ(-(w·x + c))
    cable = built()
    torch.manual_seed(0)
    fox = encodings.build("fox", CTX)
    with torch.no_grad():
        cable.slope_bias.add_(torch.randn_like(cable.slope_bias))
        fox.gate_weight.copy_(-cable.slope_weight)
        fox.gate_bias.copy_(-cable.slope_bias)
    x = torch.randn(2, 7, D)
    visible = torch.ones(7, 7, dtype=torch.bool).tril()
    torch.testing.assert_close(cable.attn_bias(None, None, torch.arange(7), 0, hidden=x)[..., visible],
                               fox.attn_bias(None, None, torch.arange(7), 0, hidden=x)[..., visible], atol=1e-5,
                               rtol=1e-5)  # fmt: skip


def test_initialisation_follows_the_released_code_and_bad_options_are_one_line():
    pe = built()
    assert (pe.slope_bias == 0).all()  # slopes start near softplus(0) = ln 2
    assert 0.01 < float(pe.slope_weight.detach().std()) < 0.03
    assert sum(p.numel() for p in pe.parameters()) == LAYERS * HEADS * (D + 1)
    alibi = built({"init": "alibi"})  # 2 heads: slopes 2^-4, 2^-8; softplus⁻¹(m) = ln(e^m - 1)
    expected = [math.log(math.exp(1 / 16) - 1), math.log(math.exp(1 / 256) - 1)]
    torch.testing.assert_close(alibi.slope_bias.detach(), torch.tensor(expected).expand(LAYERS, HEADS))
    with pytest.raises(OptionError, match=r"^encoding cable: option init='slow' is invalid; valid: one of 'zero', "
                                          r"'alibi'$"):  # fmt: skip
        built({"init": "slow"})


def test_the_model_uses_the_bias_in_every_layer_and_ignores_positions():
    torch.manual_seed(0)
    ctx = EncodingContext(d_model=32, n_heads=4, n_layers=LAYERS, max_len=64)
    model = Transformer(ModelConfig(vocab_size=17, d_model=32, n_layers=LAYERS, n_heads=4),
                        encodings.build("cable", ctx)).eval()  # fmt: skip
    tokens = torch.randint(0, 17, (2, 10), generator=torch.Generator().manual_seed(2))
    asked = []
    original = model.encoding.slopes

    def spy(x: torch.Tensor, layer: int) -> torch.Tensor:
        asked.append(layer)
        return original(x, layer)

    model.encoding.slopes = spy  # type: ignore[method-assign]
    with torch.no_grad():
        before = model(tokens)
        assert asked == list(range(LAYERS))
        torch.testing.assert_close(model(tokens, torch.arange(10) + 21), before)
        model.encoding.slope_bias.fill_(-12.0)  # slopes ≈ 0: no distance penalty, so the output changes
        assert not torch.allclose(model(tokens), before)
    model.train()
    model.encoding.slopes = original  # type: ignore[method-assign]
    model(tokens).square().mean().backward()  # the training route (blocked, per-key bias) reaches w and c
    assert model.encoding.slope_weight.grad.abs().sum() > 0 and model.encoding.slope_bias.grad.abs().sum() > 0


@pytest.mark.parametrize("options", [None, {"init": "alibi"}])
def test_cable_conforms(options):
    report = check_encoding("cable", options, speed=False)
    assert report.passed, "\n".join(report.lines())
