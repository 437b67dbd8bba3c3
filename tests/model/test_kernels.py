"""Attention kernels (pebench/models/kernels.py): each encoding runs the kernel it names, and an encoding that attends
in a new way brings its own kernel without a change to the model.

The new way here is sigmoid attention (Ramapuram et al. 2024, "Theory, Analysis, and Best Practices for Sigmoid
Self-Attention", arXiv:2409.04431, eq. 2 with their bias b = -log n): y_i = Σ_{j<=i} σ(q_i·k_j/√d + b)·v_j, the
weights not normalised over the keys. The expected output is written from that formula, not from the kernel."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from pebench import encodings
from pebench.encodings import EncodingContext
from pebench.encodings.rope import RoPE
from pebench.models import ModelConfig, Transformer
from pebench.models.kernels import ATTENTION_KERNELS, AttentionCall, KernelResult, kernel_for, register_kernel

D, HEADS, T = 32, 4, 37


@register_kernel("test_sigmoid")
def sigmoid_attention(call: AttentionCall) -> KernelResult:
    """The kernel a plugin would register in its own file: causal sigmoid attention with the bias -log(T), and its
    weights when the call wants them."""
    t = call.q.shape[-2]
    scores = call.q @ call.k.transpose(-1, -2) * call.scale - math.log(t)
    weights = torch.sigmoid(scores).masked_fill(~torch.ones(t, t, dtype=torch.bool).tril(), 0.0)
    return weights @ call.v, weights if call.want_weights else None


class SigmoidRoPE(RoPE):
    """RoPE's rotation with sigmoid attention in place of softmax: only the kernel's name says so."""

    name = "sigmoid_rope_test"
    kernel = "test_sigmoid"


def ctx() -> EncodingContext:
    return EncodingContext(d_model=D, n_heads=HEADS, n_layers=2, max_len=128)


def test_an_encoding_with_its_own_kernel_is_computed_by_it_from_the_formula() -> None:
    torch.manual_seed(0)
    model = Transformer(ModelConfig(vocab_size=11, d_model=D, n_layers=2, n_heads=HEADS), SigmoidRoPE(ctx())).eval()
    x = torch.randn(2, T, D)
    pos = torch.arange(T)
    attn = model.blocks[0].attn
    with torch.no_grad():
        got = attn(x, pos, model.encoding)
        q, k, v = attn.qkv(x).view(2, T, 3, HEADS, D // HEADS).permute(2, 0, 3, 1, 4)
        q, k = model.encoding.transform_qk(q, k, pos, 0)
        hd = D // HEADS
        y = torch.zeros(2, HEADS, T, hd)
        for i in range(T):  # y_i = Σ_{j<=i} σ(q_i·k_j/√d - log T) v_j, one query at a time
            w = torch.sigmoid((q[:, :, i : i + 1] @ k[:, :, : i + 1].transpose(-1, -2)) / math.sqrt(hd) - math.log(T))
            y[:, :, i] = (w @ v[:, :, : i + 1]).squeeze(-2)
        expected = attn.out(y.transpose(1, 2).reshape(2, T, D))
        softmax = attn.out(F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(2, T, D))
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
    assert (got - softmax).abs().max() > 1e-2  # not the softmax attention that RoPE alone would run


@pytest.mark.parametrize(
    ("name", "kernel"),
    [("rope", "fused"), ("alibi", "fused"), ("kerple", "fused"), ("tape", "fused"), ("cope", "rows"), ("fox", "rows"),
     ("cable", "rows"), ("path", "path"), ("stick_breaking", "stick_breaking"), ("randomized_rope", "fused"),
     ("ssmax_rope", "fused"), ("drope", "fused")],
)  # fmt: skip
def test_each_encoding_runs_the_kernel_its_capabilities_call_for(name: str, kernel: str) -> None:
    """A bias by rows or from the hidden states: ``rows``; otherwise ``fused``; a wrapper: its inner encoding's; PaTH
    and stick-breaking name their own, for their own scores and weights (pebench/encodings/path.py,
    stick_breaking.py)."""
    pe = encodings.build(name, ctx())
    assert pe.attention_kernel == kernel
    assert kernel_for(pe) is ATTENTION_KERNELS[kernel]


def test_every_built_in_encoding_names_a_registered_kernel() -> None:
    for name in encodings.available():
        assert encodings.build(name, ctx()).attention_kernel in ATTENTION_KERNELS, name


def test_an_unknown_kernel_is_a_one_line_error_naming_the_registered_ones() -> None:
    pe = SigmoidRoPE(ctx())
    pe.kernel = "flash9"  # type: ignore[misc]
    registered = r"registered: fused, path, rows, stick_breaking, test_sigmoid"
    with pytest.raises(ValueError, match=r"^encoding sigmoid_rope_test names the attention kernel 'flash9'; "
                                         + registered) as err:  # fmt: skip
        kernel_for(pe)
    assert "\n" not in str(err.value)


def test_a_kernel_name_is_registered_once() -> None:
    with pytest.raises(ValueError, match="'fused' is already registered"):
        register_kernel("fused")(sigmoid_attention)
