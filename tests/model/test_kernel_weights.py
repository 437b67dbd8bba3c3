"""One kernel path for outputs and weights (pebench/models/kernels.py, issue 87): a kernel asked for its weights
returns the ``(B, H, T, T)`` weights it multiplied v by, beside an output the request leaves bit for bit unchanged; the
attention maps (:meth:`pebench.models.transformer.Transformer.attention_maps`) are exactly those weights of the layer's
own kernel -- PaTH's, stick-breaking's (not a softmax), FoX's and CoPE's (``rows``), ALiBi's and RoPE's (SDPA, whose
weights come from the blocked attention with the same formula)."""

from __future__ import annotations

import pytest
import torch

from pebench import encodings
from pebench.encodings import EncodingContext
from pebench.encodings.rope import RoPE
from pebench.models import ModelConfig, Transformer
from pebench.models import state as pe_state
from pebench.models.attention import BLOCK_ROWS
from pebench.models.kernels import ATTENTION_KERNELS, AttentionCall, KernelResult, register_kernel, run_kernel

VOCAB, D, LAYERS, HEADS, T = 13, 48, 2, 2, BLOCK_ROWS + 36  # two blocks of rows; head width 24 (scale not 2^-n)
NAMES = ["path", "stick_breaking", "fox", "cope", "alibi", "rope"]
KERNELS = {"path": "path", "stick_breaking": "stick_breaking", "fox": "rows", "cope": "rows", "alibi": "fused",
           "rope": "fused"}  # fmt: skip


def make_model(name: str, options: dict[str, object] | None = None) -> Transformer:
    torch.manual_seed(0)
    ctx = EncodingContext(d_model=D, n_heads=HEADS, n_layers=LAYERS, max_len=2 * T, train_length=T)
    model = Transformer(ModelConfig(vocab_size=VOCAB, d_model=D, n_layers=LAYERS, n_heads=HEADS),
                        encodings.build(name, ctx, options))  # fmt: skip
    with torch.no_grad():  # away from initialisation, so every encoding's own parameters shape its weights
        for p in model.encoding.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return model.eval()


def tokens() -> torch.Tensor:
    return torch.randint(0, VOCAB, (2, T), generator=torch.Generator().manual_seed(1))


def layer_call(model: Transformer, layer: int, want_weights: bool) -> AttentionCall:
    """The call ``layer``'s attention receives in the model's forward on :func:`tokens`."""
    x, positions = model.hidden_states(tokens())
    shared = pe_state.scratch(model.encoding, positions, x.shape[0])
    for block in model.blocks[:layer]:
        x = block(x, positions, model.encoding, shared)
    attn = model.blocks[layer].attn
    return attn.call(model.blocks[layer].attn_norm(x), positions, model.encoding, shared, want_weights)


@pytest.mark.parametrize(("name", "options"), [(n, None) for n in NAMES] + [("stick_breaking", {"remainder": "drop"})])
@pytest.mark.parametrize("layer", [0, LAYERS - 1])
def test_the_maps_are_the_weights_the_kernel_multiplied_the_values_by(name: str, options: dict | None,
                                                                       layer: int) -> None:  # fmt: skip
    """Stick-breaking's weights sum to 1 with its leftover on the diagonal (``remainder="self"``, the default), to
    less without it (``"drop"``: not a softmax, and the maps say so)."""
    model = make_model(name, options)
    assert model.encoding.attention_kernel == KERNELS[name]
    with torch.no_grad():
        call = layer_call(model, layer, want_weights=True)
        out, weights = run_kernel(call)
        plain, none = run_kernel(layer_call(model, layer, want_weights=False))
        maps = model.attention_maps(tokens(), layer=layer)
    assert none is None and weights is not None and weights.shape == (2, HEADS, T, T)
    assert torch.equal(out, plain)  # the request changes no operation that makes the output
    assert torch.equal(maps, weights)  # the maps are the kernel's own weights, bit for bit
    torch.testing.assert_close(weights @ call.v, out, atol=2e-6, rtol=1e-5)  # ... the ones that made its output
    assert (weights[..., torch.ones(T, T, dtype=torch.bool).triu(1)] == 0).all() and (weights >= 0).all()
    sums = weights.sum(-1)
    if options:  # stick-breaking dropping its leftover: what the sticks leave goes to no key
        assert (sums <= 1 + 1e-6).all() and sums.min() < 0.99 and (sums[..., 0] == 0).all()
    else:
        torch.testing.assert_close(sums, torch.ones_like(sums), atol=1e-5, rtol=0)


@pytest.mark.parametrize("name", NAMES + ["kerple"])  # KERPLE: a learned mask, blocked on the CPU in training
def test_a_weights_request_changes_no_output_in_training_either(name: str) -> None:
    """In training (gradients on: the ``rows`` kernel by blocks of rows on the CPU, ``fused`` blocked for a mask
    that needs a gradient) the output with the request is the output without it, and so are the gradients."""
    model = make_model(name).train()
    results = []
    for want in (False, True):
        model.zero_grad()
        out, weights = run_kernel(layer_call(model, LAYERS - 1, want))
        out.square().sum().backward()
        assert (weights is not None) == want
        results.append((out.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}))
    (out_a, grads_a), (out_b, grads_b) = results
    assert torch.equal(out_a, out_b)
    assert grads_a.keys() == grads_b.keys() and all(torch.equal(grads_a[n], grads_b[n]) for n in grads_a)


def test_a_kernel_of_the_former_signature_is_a_one_line_error() -> None:
    """A kernel returning the output alone (the signature before issue 87) is named, not unpacked along the batch."""

    @register_kernel("test_output_only")
    def output_only(call: AttentionCall) -> KernelResult:
        return ATTENTION_KERNELS["fused"](call)[0]  # type: ignore[return-value]

    class OutputOnly(RoPE):
        name = "output_only_test"
        kernel = "test_output_only"

    try:
        ctx = EncodingContext(d_model=D, n_heads=HEADS, n_layers=LAYERS, max_len=2 * T)
        model = Transformer(ModelConfig(vocab_size=VOCAB, d_model=D, n_layers=LAYERS, n_heads=HEADS), OutputOnly(ctx))
        with pytest.raises(TypeError, match=r"^attention kernel 'test_output_only' must return \(out, None\)") as err:
            model(tokens())
        assert "\n" not in str(err.value)
    finally:
        ATTENTION_KERNELS.pop("test_output_only")
