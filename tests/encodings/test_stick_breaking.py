"""Stick-breaking attention (Tan et al. 2024, arXiv:2410.17980) from its formula: A_ij = β_ij · Π_{j<k<i} (1 - β_ik)
with β = σ(score) over the strictly earlier keys, the leftover 1 - Σ_j A_ij on the current token by default; the
reference below is the explicit product, written with Python loops, never the log-space code under test."""

from __future__ import annotations

import math

import pytest
import torch

from pebench import encodings
from pebench.encodings import EncodingContext
from pebench.encodings.base import Wrapper
from pebench.encodings.stick_breaking import stick_breaking_weights
from pebench.models.kernels import SOFTMAX_KERNELS
from pebench.models.transformer import ModelConfig, Transformer

VOCAB, D, HEADS, LAYERS = 17, 32, 4, 2
CTX = EncodingContext(d_model=D, n_heads=HEADS, n_layers=LAYERS, max_len=128)


def sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z))


def product_formula(z: torch.Tensor, remainder: str) -> torch.Tensor:
    """A from the stick-breaking product, one entry at a time, for square scores ``(T, T)``."""
    t = z.shape[0]
    a = torch.zeros(t, t, dtype=torch.float64)
    for i in range(t):
        for j in range(i):
            w = sigmoid(float(z[i, j]))
            for k in range(j + 1, i):
                w *= 1.0 - sigmoid(float(z[i, k]))
            a[i, j] = w
        if remainder == "self":
            a[i, i] = 1.0 - float(a[i, :i].sum())
    return a


def test_a_small_example_by_hand():
    # z_10 = 0 (β = 1/2); z_20 = 0 (β = 1/2), z_21 = ln 3 (β = 3/4). Row 2: the nearer key 1 takes 3/4 of the stick,
    # key 0 takes 1/2 of the remaining 1/4 = 1/8, and 1/8 is left over for the token itself.
    z = torch.tensor([[5.0, 9.0, 9.0], [0.0, 7.0, 9.0], [0.0, math.log(3), -1.0]])  # j >= i entries are ignored
    expected = torch.tensor([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.125, 0.75, 0.125]])
    torch.testing.assert_close(stick_breaking_weights(z, 0), expected)
    dropped = torch.tensor([[0.0, 0.0, 0.0], [0.5, 0.0, 0.0], [0.125, 0.75, 0.0]])
    torch.testing.assert_close(stick_breaking_weights(z, 0, "drop"), dropped)


@pytest.mark.parametrize("remainder", ["self", "drop"])
def test_weights_equal_the_product_formula_and_rows_sum_to_at_most_one(remainder: str):
    z = 3 * torch.randn(9, 9, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    got = stick_breaking_weights(z, 0, remainder).double()
    torch.testing.assert_close(got, product_formula(z, remainder), atol=1e-6, rtol=1e-5)
    sums = stick_breaking_weights(z, 0, "drop").sum(-1)
    assert (sums <= 1 + 1e-6).all() and sums[0] == 0
    if remainder == "self":
        torch.testing.assert_close(got.sum(-1), torch.ones(9, dtype=torch.float64))


def product_formula_torch(z: torch.Tensor, remainder: str) -> torch.Tensor:
    """The stick-breaking product of square float64 scores ``(T, T)`` in differentiable torch ops (loops, no log
    space), for the gradient reference."""
    t = z.shape[0]
    beta = torch.sigmoid(z)
    rows = []
    for i in range(t):
        row = []
        for j in range(t):
            if j < i:
                w = beta[i, j]
                for k in range(j + 1, i):
                    w = w * (1 - beta[i, k])
                row.append(w)
            else:
                row.append(z.new_zeros(()))
        rows.append(torch.stack(row))
    a = torch.stack(rows)
    if remainder == "self":
        a = a + torch.diag(1 - a.sum(-1))
    return a


@pytest.mark.parametrize("remainder", ["self", "drop"])
def test_the_hand_written_backward_equals_the_gradient_of_the_product(remainder: str):
    gen = torch.Generator().manual_seed(3)
    z = (2 * torch.randn(8, 8, generator=gen, dtype=torch.float64)).requires_grad_()
    upstream = torch.randn(8, 8, generator=gen, dtype=torch.float64)
    (product_formula_torch(z, remainder) * upstream).sum().backward()
    want = z.grad.clone()
    z.grad = None
    (stick_breaking_weights(z, 0, remainder).double() * upstream).sum().backward()
    torch.testing.assert_close(z.grad, want, atol=1e-5, rtol=1e-4)
    # a block of rows (start > 0) against its keys, and packed seeds (vmap) give the same gradient
    block = z.detach()[3:, :].clone().requires_grad_()
    (stick_breaking_weights(block, 3, remainder).double() * upstream[3:]).sum().backward()
    torch.testing.assert_close(block.grad, want[3:], atol=1e-5, rtol=1e-4)
    packed = z.detach().expand(2, 8, 8).clone().requires_grad_()
    out = torch.func.vmap(lambda s: stick_breaking_weights(s, 0, remainder))(packed)
    (out.double() * upstream).sum().backward()
    torch.testing.assert_close(packed.grad, want.expand(2, 8, 8), atol=1e-5, rtol=1e-4)


def test_weights_under_e_minus_40_are_zero_and_the_rest_unchanged():
    # a long row of confident breaks (σ(6) ≈ 0.9975 each): key i-1-n keeps (1 - 0.9975)^n of the stick, e^-6n
    z = torch.full((1, 30), 6.0, dtype=torch.float64)
    got = stick_breaking_weights(z, 29, "drop").double()[0]
    log_formula = [math.log(sigmoid(6.0)) - (29 - 1 - j) * math.log1p(math.exp(6.0)) for j in range(29)]
    for j, lw in enumerate(log_formula):
        if lw < -40.5:
            assert got[j] == 0.0, j  # no subnormal floats: they slow the CPU's matmuls many times over
        elif lw > -39.5:
            assert abs(math.log(float(got[j])) - lw) < 1e-4, j


def test_large_scores_stay_finite_and_a_block_of_rows_equals_the_full_rows():
    z = 40 * torch.randn(2, 3, 70, 70, generator=torch.Generator().manual_seed(1))
    full = stick_breaking_weights(z, 0)
    assert torch.isfinite(full).all() and (full >= 0).all()
    for start, stop in ((0, 5), (5, 64), (64, 70)):
        rows = stick_breaking_weights(z[..., start:stop, :stop], start)
        torch.testing.assert_close(rows, full[..., start:stop, :stop])


def test_the_model_uses_stick_breaking_weights_not_softmax():
    torch.manual_seed(0)
    model = Transformer(ModelConfig(vocab_size=VOCAB, d_model=D, n_layers=LAYERS, n_heads=HEADS),
                        encodings.build("stick_breaking", CTX)).eval()
    tokens = torch.randint(0, VOCAB, (2, 12), generator=torch.Generator().manual_seed(2))
    maps = model.attention_maps(tokens, layer=0)
    block = model.blocks[0]
    x, pos = model.hidden_states(tokens)
    h = block.attn_norm(x)
    q, k, _ = block.attn.qkv(h).view(2, 12, 3, HEADS, D // HEADS).permute(2, 0, 3, 1, 4)
    z = (q @ k.transpose(-1, -2)) * (D // HEADS) ** -0.5
    for b, head in ((0, 0), (1, 3)):
        torch.testing.assert_close(maps[b, head].double(), product_formula(z[b, head].detach(), "self"),
                                   atol=1e-5, rtol=1e-4)
    with torch.no_grad():  # positions are not read: shifting them changes nothing
        torch.testing.assert_close(model(tokens), model(tokens, torch.arange(12) + 37))


def test_a_wrapper_forwards_the_kernel_and_the_roles_with_their_keywords():
    """A wrapper's kernel and derived capabilities are its inner encoding's: stick-breaking's kernel finds the
    weights of the encoding it wraps (the same output), FoX's bias from the hidden states is forwarded with its
    keywords."""

    class Passthrough(Wrapper):
        name = "passthrough_test_wrapper"

        def __init__(self, ctx: EncodingContext, inner: encodings.PositionalEncoding) -> None:
            super().__init__(ctx)
            self.inner = inner

    sb, fox = encodings.build("stick_breaking", CTX), encodings.build("fox", CTX)
    wrapped_sb, wrapped_fox = Passthrough(CTX, sb), Passthrough(CTX, fox)
    assert wrapped_sb.attention_kernel == "stick_breaking" and not wrapped_sb.reads_hidden
    assert wrapped_fox.reads_hidden and wrapped_fox.per_key_bias and wrapped_fox.attention_kernel == "rows"
    assert "stick_breaking" not in SOFTMAX_KERNELS and "rows" in SOFTMAX_KERNELS
    torch.manual_seed(0)
    model = Transformer(ModelConfig(vocab_size=VOCAB, d_model=D, n_layers=LAYERS, n_heads=HEADS), sb).eval()
    tokens = torch.randint(0, VOCAB, (2, 9))
    with torch.no_grad():
        alone = model(tokens)
        model.encoding = wrapped_sb
        torch.testing.assert_close(model(tokens), alone, atol=0, rtol=0)
    x = torch.randn(2, 5, D)
    for per_key in (False, True):
        torch.testing.assert_close(wrapped_fox.attn_bias(None, None, torch.arange(5), 1, hidden=x, per_key=per_key),
                                   fox.attn_bias(None, None, torch.arange(5), 1, hidden=x, per_key=per_key))
