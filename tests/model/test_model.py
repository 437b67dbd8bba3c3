"""The transformer host: causality, batch independence, positions handling, config validation, attention maps,
device selection and gradient flow, for every registered encoding."""

from __future__ import annotations

import math

import pytest
import torch

from pebench import encodings
from pebench.encodings import EncodingContext
from pebench.encodings.alibi import alibi_slopes
from pebench.encodings.sinusoidal import sinusoid_table
from pebench.engine.device import cpu_description, cpu_model, pick_device
from pebench.errors import PebenchError
from pebench.models import state as pe_state
from pebench.models.transformer import ModelConfig, Transformer

ENCODINGS = encodings.available()
CASES = [
    pytest.param(n, marks=pytest.mark.skip(reason=f"{n} needs {', '.join(sorted(encodings.get(n).needs))} annotations, "
                                          "which random tokens do not carry (tested on task batches in "
                                          "tests/encodings/test_annotation_encodings.py)"))
    if encodings.get(n).needs else n
    for n in ENCODINGS
]  # fmt: skip
"""Every encoding; those that read task annotations (Abacus, coupling) skipped with the reason."""
VOCAB, D, LAYERS, HEADS, MAX_LEN, T = 17, 32, 2, 4, 128, 16


def make_model(name: str, seed: int = 0, options: dict | None = None, **cfg_kw) -> Transformer:
    torch.manual_seed(seed)
    kw = {"vocab_size": VOCAB, "d_model": D, "n_layers": LAYERS, "n_heads": HEADS, **cfg_kw}
    cfg = ModelConfig(**kw)
    ctx = EncodingContext(d_model=cfg.d_model, n_heads=cfg.n_heads, n_layers=cfg.n_layers, max_len=MAX_LEN)
    return Transformer(cfg, encodings.build(name, ctx, options)).eval()


def tokens(batch: int, length: int = T, seed: int = 1) -> torch.Tensor:
    return torch.randint(0, VOCAB, (batch, length), generator=torch.Generator().manual_seed(seed))


def shifted_positions(batch: int, length: int = T, seed: int = 2) -> torch.Tensor:
    """Per-sample positions: each row 0..T-1 shifted by its own offset (so rows differ)."""
    offsets = torch.randint(0, MAX_LEN - length, (batch, 1), generator=torch.Generator().manual_seed(seed))
    return torch.arange(length)[None, :] + offsets


def test_every_core_encoding_is_tested():
    assert set(ENCODINGS) >= {"alibi", "learned", "nope", "rope", "sinusoidal"}


# -- causality ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("cut", [0, 5, T - 2])
def test_causality(name, cut):
    model = make_model(name)
    x = tokens(3)
    y = x.clone()
    y[:, cut + 1 :] = (y[:, cut + 1 :] + 1 + torch.randint(0, VOCAB - 1, y[:, cut + 1 :].shape)) % VOCAB
    assert (x[:, cut + 1 :] != y[:, cut + 1 :]).all()
    with torch.no_grad():
        a, b = model(x), model(y)
    torch.testing.assert_close(a[:, : cut + 1], b[:, : cut + 1], atol=1e-5, rtol=0)
    # ... and the later positions do see the change (the test would otherwise be vacuous).
    assert (a[:, cut + 1 :] - b[:, cut + 1 :]).abs().max() > 1e-4


# -- batch independence ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("per_sample", [False, True], ids=["shared_pos", "per_sample_pos"])
def test_batch_independence(name, per_sample):
    model = make_model(name)
    batch = tokens(4)
    pos = shifted_positions(4) if per_sample else None
    with torch.no_grad():
        alone = model(batch[:1], None if pos is None else pos[:1])
        together = model(batch, pos)
        # Different companions for sample 0 give the same result for sample 0.
        others = batch.clone()
        others[1:] = tokens(3, seed=99)
        other_pos = None
        if pos is not None:
            other_pos = pos.clone()
            other_pos[1:] = shifted_positions(3, seed=123)
        together2 = model(others, other_pos)
    torch.testing.assert_close(together[:1], alone, atol=1e-5, rtol=0)
    torch.testing.assert_close(together2[:1], alone, atol=1e-5, rtol=0)


@pytest.mark.parametrize("name", CASES)
def test_per_sample_positions_match_rowwise_shared_positions(name):
    model = make_model(name)
    x, pos = tokens(3), shifted_positions(3)
    with torch.no_grad():
        batched = model(x, pos)
        for row in range(3):
            torch.testing.assert_close(batched[row], model(x[row : row + 1], pos[row])[0], atol=1e-5, rtol=0)


# -- explicit positions ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", CASES)
def test_explicit_positions(name):
    model = make_model(name)
    x = tokens(3)
    with torch.no_grad():
        implicit = model(x)
        explicit = model(x, torch.arange(T))
        rows = model(x, torch.arange(T).expand(3, T).clone())
    torch.testing.assert_close(explicit, implicit, atol=0, rtol=0)
    torch.testing.assert_close(rows, implicit, atol=1e-5, rtol=0)


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("shape", [(T + 1,), (T - 1,), (), (3, T + 1), (3, T, 1), (1, 3, T), (2, T), (5, T)], ids=str)
def test_bad_positions_shape(name, shape):
    model = make_model(name)
    pos = torch.zeros(shape, dtype=torch.long)
    with pytest.raises(ValueError, match="positions"):
        model(tokens(3), pos)
    with pytest.raises(ValueError, match="positions"):
        model.attention_maps(tokens(3), pos)


# -- config ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kw",
    [
        {"d_model": 30, "n_heads": 4},
        {"d_model": 0},
        {"d_model": -32},
        {"n_heads": 0},
        {"n_layers": 0},
        {"n_layers": -1},
        {"vocab_size": 0},
        {"ffn_hidden": -8},
        {"dropout": 1.0},
        {"dropout": -0.1},
    ],
    ids=str,
)
def test_model_config_validation(kw):
    base = {"vocab_size": VOCAB, "d_model": D, "n_layers": LAYERS, "n_heads": HEADS}
    with pytest.raises(ValueError, match="model"):
        ModelConfig(**{**base, **kw})


def test_model_config_divisibility_message():
    with pytest.raises(ValueError, match=r"d_model \(30\).*n_heads \(4\)"):
        ModelConfig(vocab_size=VOCAB, d_model=30, n_heads=4)


@pytest.mark.parametrize(("d_model", "hidden"), [(128, 352), (32, 96), (64, 192), (256, 704), (4096, 10944)])
def test_llama_ffn_hidden(d_model, hidden):
    # LLaMA's rule: int(2/3 * 4d), rounded up to a multiple of 32. d=128: 341.33 -> 341 -> 352.
    cfg = ModelConfig(vocab_size=VOCAB, d_model=d_model, n_heads=4)
    assert cfg.hidden == hidden
    assert cfg.hidden % 32 == 0
    assert ModelConfig(vocab_size=VOCAB, d_model=d_model, n_heads=4, ffn_hidden=50).hidden == 50
    assert cfg.head_dim == d_model // 4


def test_model_uses_configured_sizes():
    model = make_model("nope", ffn_hidden=40)
    assert model.blocks[0].ffn.gate.weight.shape == (40, D)
    assert len(model.blocks) == LAYERS
    assert model(tokens(2)).shape == (2, T, VOCAB)
    assert model.num_parameters() == sum(p.numel() for p in model.parameters())


def test_learned_init_std_option_is_respected_by_the_model():
    # The model's own weight initialisation must not overwrite the encoding's table initialisation.
    model = make_model("learned", options={"init_std": 0.5})
    std = model.encoding.table.weight.std().item()
    assert 0.45 < std < 0.55
    zero = make_model("learned", options={"init_std": 0.0})
    assert zero.encoding.table.weight.abs().max().item() == 0.0


# -- attention maps ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("layer", [0, -1])
@pytest.mark.parametrize("per_sample", [False, True], ids=["shared_pos", "per_sample_pos"])
def test_attention_maps_are_causal_distributions(name, layer, per_sample):
    model = make_model(name)
    pos = shifted_positions(2) if per_sample else None
    maps = model.attention_maps(tokens(2), pos, layer=layer)
    assert maps.shape == (2, HEADS, T, T)
    assert torch.isfinite(maps).all()
    torch.testing.assert_close(maps.sum(-1), torch.ones(2, HEADS, T), atol=1e-5, rtol=0)
    upper = torch.ones(T, T, dtype=torch.bool).triu(1)
    assert (maps[..., upper] == 0).all()
    assert (maps >= 0).all()
    assert maps[..., 0, 0].eq(1).all()  # the first query can only attend to itself


@pytest.mark.parametrize("name", CASES)
def test_attention_maps_reproduce_the_layer_output(name):
    """Maps @ V through the output projection equals what the model's (SDPA) attention computes."""
    model = make_model(name)
    x_tok = tokens(2)
    with torch.no_grad():
        x, pos = model.hidden_states(x_tok)
        shared = pe_state.scratch(model.encoding, pos, 2)  # the forward pass's scratch: an encoding's state, if any
        for block in model.blocks[:-1]:
            x = block(x, pos, model.encoding, shared)
        last = model.blocks[-1]
        h = last.attn_norm(x)
        expected = last.attn(h, pos, model.encoding, shared)
        v = last.attn.call(h, pos, model.encoding, shared).v[..., : last.attn.head_dim]  # the head's own values
        maps = model.attention_maps(x_tok, layer=-1)
        y = (maps @ v).transpose(1, 2).reshape(2, T, D)
        got = last.attn.out(y)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-4)


def test_token_embeddings_are_scaled_by_sqrt_d_model_when_an_encoding_adds_a_vector():
    x_tok = tokens(2)
    for scale in (True, False):
        model = make_model("sinusoidal", scale_embeddings=scale)
        with torch.no_grad():
            x, _ = model.hidden_states(x_tok)
            expected = model.embed(x_tok) * (math.sqrt(D) if scale else 1.0) + sinusoid_table(torch.arange(T), D)
            torch.testing.assert_close(x, expected)
    # an encoding that adds no vector leaves the token embeddings as they are
    for name in ("nope", "rope", "alibi"):
        model = make_model(name)
        with torch.no_grad():
            torch.testing.assert_close(model.hidden_states(x_tok)[0], model.embed(x_tok))


def test_alibi_attention_maps_match_the_paper_formula():
    """softmax(q·k / sqrt(d_h) - m_h (i - j)) over j <= i, with q, k computed by hand from the first layer."""
    model = make_model("alibi")
    x_tok = tokens(2)
    with torch.no_grad():
        block = model.blocks[0]
        h = block.attn_norm(model.embed(x_tok))
        q, k, _ = block.attn.qkv(h).split(D, dim=-1)
        hd = D // HEADS
        q = q.view(2, T, HEADS, hd).transpose(1, 2)
        k = k.view(2, T, HEADS, hd).transpose(1, 2)
        slopes = torch.tensor([0.25, 0.0625, 0.015625, 0.00390625])
        i = torch.arange(T)[:, None]
        j = torch.arange(T)[None, :]
        scores = q @ k.transpose(-1, -2) / math.sqrt(hd) - slopes[:, None, None] * (i - j)
        scores = scores.masked_fill(j > i, float("-inf"))
        expected = scores.softmax(-1)
        maps = model.attention_maps(x_tok, layer=0)
    assert alibi_slopes(HEADS) == slopes.tolist()
    torch.testing.assert_close(maps, expected, atol=1e-6, rtol=1e-5)


# -- device ------------------------------------------------------------------------------------------------------


def _auto_device_type() -> str:
    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


def test_pick_device_auto():
    for requested in (None, "", "auto"):
        assert pick_device(requested).type == _auto_device_type()
    if _auto_device_type() == "cpu":
        assert pick_device() == torch.device("cpu")


def test_pick_device_cpu():
    assert pick_device("cpu") == torch.device("cpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")
@pytest.mark.parametrize("name", ["cuda", "cuda:0", "cuda:3"])
def test_pick_device_cuda_unavailable(name):
    with pytest.raises(PebenchError, match="CUDA is not available"):
        pick_device(name)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_pick_device_cuda_available():
    assert pick_device("cuda").type == "cuda"
    with pytest.raises(PebenchError, match="valid"):
        pick_device(f"cuda:{torch.cuda.device_count()}")


@pytest.mark.parametrize("name", ["garbage", "gpu", "cuda:x", "meta"])
def test_pick_device_garbage(name):
    with pytest.raises(PebenchError, match=r"valid.*cpu") as err:
        pick_device(name)
    assert repr(name) in str(err.value)


def test_a_run_records_the_cpu_model_by_family_and_model_numbers():
    # two CPU types of the development machines share the name "Intel(R) Xeon(R) Processor"; their numbers differ
    intel = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 167\n" \
            "model name\t: Intel(R) Xeon(R) Processor\nstepping\t: 1\n\nprocessor\t: 1\nmodel\t\t: 167\n"
    assert cpu_model(intel) == "Intel(R) Xeon(R) Processor (family 6 model 167)"
    assert cpu_model("model name\t: AMD EPYC\n") == "AMD EPYC"  # numbers missing: the name alone
    assert cpu_model("") == ""
    described = cpu_description()
    assert described.count(",") == 2 and described.endswith(" BLAS")  # model, capability, BLAS

@pytest.mark.parametrize("name", CASES)
def test_model_runs_on_picked_device(name):
    device = pick_device()
    model = make_model(name).to(device)
    x = tokens(2).to(device)
    with torch.no_grad():
        out = model(x, shifted_positions(2).to(device))
        maps = model.attention_maps(x)
    assert out.device.type == device.type
    assert maps.device.type == device.type
    assert torch.isfinite(out).all()
    # positions given on the CPU are moved to the tokens' device
    with torch.no_grad():
        torch.testing.assert_close(model(x, torch.arange(T)), model(x), atol=1e-5, rtol=0)


# -- gradients ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", CASES)
def test_gradient_reaches_every_parameter(name):
    model = make_model(name).train()
    length = 12
    x = tokens(3, length)
    logits = model(x)
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB), x.roll(-1, dims=1).reshape(-1))
    loss.backward()
    if any(p.grad is not None and not p.grad.any() for p in model.parameters()):
        # a parameter behind a zero-initialised one (TAPE's W_x and W_down behind W_up = 0) has no gradient until
        # that one moves: one SGD step, then the gradients again
        with torch.no_grad():
            for p in model.parameters():
                if p.grad is not None:
                    p.sub_(0.1 * p.grad)
        model.zero_grad(set_to_none=True)
        logits = model(x)
        torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB), x.roll(-1, dims=1).reshape(-1)).backward()
    for pname, p in model.named_parameters():
        if not p.requires_grad:
            continue
        assert p.grad is not None, pname
        assert torch.isfinite(p.grad).all(), pname
        if pname == "encoding.table.weight":
            # Learned table: only the rows of positions used in the batch get a gradient.
            used = p.grad[:length].abs().sum(-1)
            assert (used > 0).all(), pname
            assert (p.grad[length:] == 0).all(), pname
        elif pname == "embed.weight":
            seen = torch.unique(x)
            assert (p.grad[seen].abs().sum(-1) > 0).all(), pname
        else:
            assert p.grad.abs().max() > 0, pname
