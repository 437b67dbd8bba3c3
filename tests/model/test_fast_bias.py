"""The fast attention-bias path equals plain dense attention: 4-d cached masks, biases shared by layers, the blocked
causal attention used for biases that need a gradient, and the position memo (issue 17, item 3).

The reference is written out here from the definition softmax(q·kᵀ/√d + bias + causal)·v (the encoding's own
attention weights in place of softmax, and its own scores in place of q·kᵀ, where its kernel computes them:
:data:`CUSTOM`), independently of the model's attention code, and compared for every registered encoding on logits and
on every parameter's gradient."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
from torch import nn
from torch.func import functional_call, stack_module_state, vmap

from pebench import encodings
from pebench.encodings import EncodingContext
from pebench.encodings.base import DERIVED_CAPABILITIES, PositionalEncoding, PositionMemo, RowBlock
from pebench.encodings.tape import TAPE
from pebench.models import attention as tm
from pebench.models.kernels import ATTENTION_KERNELS, AttentionCall, KernelResult, blocked, register_kernel
from pebench.models.transformer import ModelConfig, Transformer

VOCAB, D, LAYERS, HEADS, MAX_LEN = 17, 32, 2, 4, 256
T = 2 * tm.BLOCK_ROWS + 13  # three query blocks, the last one partial


def make_model(name: str) -> Transformer:
    torch.manual_seed(0)
    cfg = ModelConfig(vocab_size=VOCAB, d_model=D, n_layers=LAYERS, n_heads=HEADS)
    ctx = EncodingContext(d_model=D, n_heads=HEADS, n_layers=LAYERS, max_len=MAX_LEN)
    model = Transformer(cfg, encodings.build(name, ctx)).train()
    with torch.no_grad():  # move learned biases (and a carried state's updates) off their zero init so they matter
        for pname, p in model.encoding.named_parameters():
            moved = "table" in pname or pname.startswith("bias") or model.encoding.carries_state
            p.add_(0.3 * torch.randn_like(p)) if moved else None
    return model


CUSTOM = {"path": "scores", "stick_breaking": "weights", "test_combined": "scores weights"}
"""The kernels that compute scores in place of q·kᵀ (``scores(q, k, x, layer)``) or weights in place of softmax
(``weights(scores, start)``) with the encoding's methods of those names."""


def custom_scores(pe: PositionalEncoding) -> object:
    """The encoding's own scores its kernel uses in place of q·kᵀ (PaTH's); None: q·kᵀ."""
    return getattr(pe, "scores", None) if "scores" in CUSTOM.get(pe.attention_kernel, "") else None


def custom_weights(pe: PositionalEncoding) -> object:
    """The encoding's own weights its kernel uses in place of softmax (stick-breaking's); None: softmax."""
    return getattr(pe, "weights", None) if "weights" in CUSTOM.get(pe.attention_kernel, "") else None


def keywords(pe: PositionalEncoding, state: torch.Tensor | None, h: torch.Tensor) -> dict[str, torch.Tensor]:
    """The keywords of transform_qk the class's override names (the carried state, the hidden states)."""
    return {**({"state": state} if pe.qk_with_state and state is not None else {}),
            **({"hidden": h} if pe.qk_from_hidden else {})}  # fmt: skip


def reference_forward(model: Transformer, tokens: torch.Tensor, positions: torch.Tensor | None,
                      maps: list[torch.Tensor] | None = None) -> torch.Tensor:  # fmt: skip
    """The model's forward with attention written out densely: no SDPA, no memo, no sharing, no blocks (each layer's
    attention weights appended to ``maps`` when given)."""
    pe = model.encoding
    x, pos = model.hidden_states(tokens, positions)
    t = tokens.shape[1]
    causal = torch.ones(t, t, dtype=torch.bool).tril()
    state = pe.init_state(pos, x.shape[0]) if pe.carries_state else None  # a state carried from layer to layer
    for block in model.blocks:
        attn = block.attn
        h = block.attn_norm(x)
        b = h.shape[0]
        q, k, v = attn.qkv(h).view(b, t, 3, attn.n_heads, attn.head_dim).permute(2, 0, 3, 1, 4)
        # with the state entering the layer (TAPE) and the hidden states (CARoPE's phases) where the hook reads them
        q, k = pe.transform_qk(q, k, pos, attn.layer, **keywords(pe, state, h))
        own_scores, own_weights = custom_scores(pe), custom_weights(pe)
        raw = own_scores(q, k, h, attn.layer) if own_scores else q @ k.transpose(-1, -2)  # type: ignore[operator]
        scores = raw * pe.attn_scale  # the encoding's own scores in place of q·kᵀ (PaTH)
        bias = pe.attn_bias(q, k, pos, attn.layer)
        if bias is not None:
            scores = scores + bias
        if pe.reads_hidden:  # a bias from the hidden states entering the attention (FoX's forget gates)
            scores = scores + pe.attn_bias(q, k, pos, attn.layer, hidden=h)
        scores = scores.masked_fill(~causal, float("-inf"))
        probs = own_weights(scores, 0) if own_weights else scores.softmax(-1)  # type: ignore[operator]
        if maps is not None:
            maps.append(probs)
        y = (probs @ v).transpose(1, 2).reshape(b, t, -1)
        x = x + attn.out(y)
        out = block.ffn(block.ffn_norm(x))
        if state is not None:  # the state's channels mixed by the same weights, then the update from the FFN output
            extra = pe.state_values(state, attn.layer)
            state = pe.update_state(state, None if extra is None else probs @ extra, out, attn.layer)
        x = x + out
    return model.head(model.norm(x))


def grads(model: Transformer, logits: torch.Tensor) -> dict[str, torch.Tensor]:
    model.zero_grad(set_to_none=True)
    (logits.square().mean() + logits[:, -1].sum()).backward()
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.skip(reason=f"{n} needs task annotations and adds no attention bias (tested in "
                                          "tests/encodings/test_annotation_encodings.py)"))
    if encodings.get(n).needs else n
    for n in encodings.available()
])  # fmt: skip
@pytest.mark.parametrize("per_sample", [False, True], ids=["shared", "per-sample"])
def test_fast_path_equals_dense_attention(name: str, per_sample: bool) -> None:
    model = make_model(name)
    tokens = torch.randint(0, VOCAB, (3, T), generator=torch.Generator().manual_seed(1))
    positions = None
    if per_sample:
        offsets = torch.tensor([[0], [5], [40]])
        positions = torch.arange(T)[None, :] + offsets
    ours = model(tokens, positions)
    theirs = reference_forward(model, tokens, positions)
    torch.testing.assert_close(ours, theirs, atol=2e-5, rtol=1e-4)
    g_ours, g_theirs = grads(model, model(tokens, positions)), grads(model, reference_forward(model, tokens, positions))
    assert g_ours.keys() == g_theirs.keys()
    for key in g_ours:
        torch.testing.assert_close(g_ours[key], g_theirs[key], atol=1e-5, rtol=1e-3, msg=f"{name}: grad of {key}")
    with torch.no_grad():  # evaluation: learned biases need no gradient, so the SDPA (flash) route with a mask
        torch.testing.assert_close(model.eval()(tokens, positions), theirs, atol=2e-5, rtol=1e-4)


def test_blocked_attention_equals_dense_for_lengths_around_the_block() -> None:
    gen = torch.Generator().manual_seed(0)
    for t in (1, tm.BLOCK_ROWS - 1, tm.BLOCK_ROWS, tm.BLOCK_ROWS + 1, 3 * tm.BLOCK_ROWS):
        q, k, v = (torch.randn(2, 3, t, 8, generator=gen) for _ in range(3))
        bias = torch.randn(3, t, t, generator=gen)
        mask = tm.attention_mask(bias, torch.float32)
        causal = torch.ones(t, t, dtype=torch.bool).tril()
        probs = ((q @ k.transpose(-1, -2)) * 0.5 + bias).masked_fill(~causal, float("-inf")).softmax(-1)
        out, none = tm.blocked_causal_attention(q, k, v, mask, 0.5)
        assert none is None
        torch.testing.assert_close(out, probs @ v, atol=1e-5, rtol=1e-5)
        same, weights = tm.blocked_causal_attention(q, k, v, mask, 0.5, want_weights=True)  # and the weights it used
        assert torch.equal(same, out)
        torch.testing.assert_close(weights, probs, atol=1e-6, rtol=1e-5)


def test_attention_mask_is_four_dimensional_and_causal() -> None:
    bias = torch.arange(9.0).view(1, 3, 3).expand(2, 3, 3)
    mask = tm.attention_mask(bias, torch.float32)
    assert mask.shape == (1, 2, 3, 3)  # a 3-d mask would send CPU SDPA to its slow math path
    assert torch.isinf(mask[0, 0].triu(1)[torch.ones(3, 3, dtype=torch.bool).triu(1)]).all()
    assert torch.equal(mask[0, 1].tril(), bias[1].tril())
    assert tm.attention_mask(torch.zeros(4, 2, 3, 3), torch.float32).shape == (4, 2, 3, 3)


def built(name: str, options: dict | None = None) -> encodings.PositionalEncoding:
    torch.manual_seed(0)
    return encodings.build(name, EncodingContext(d_model=D, n_heads=HEADS, n_layers=LAYERS, max_len=MAX_LEN), options)


SHARED = [n for n in encodings.available() if built(n).bias_shared_by_layers]


def test_the_expected_encodings_share_their_bias() -> None:
    assert {"alibi", "t5", "fire"} <= set(SHARED)
    assert not {"kerple", "cope", "rope", "nope"} & set(SHARED)
    assert built("drope", {"base": "alibi"}).bias_shared_by_layers  # a wrapper says what its inner encoding says
    assert not built("drope", {"base": "kerple"}).bias_shared_by_layers


@pytest.mark.parametrize("name", SHARED)
def test_layer_shared_biases_ignore_layer_and_content(name: str) -> None:
    """What the capability promises, checked on the encoding itself: the same bias for any layer, q and k."""
    pe = built(name)
    pos = torch.arange(20)
    q1, k1, q2, k2 = (torch.randn(2, HEADS, 20, D // HEADS) for _ in range(4))
    first = pe.attn_bias(q1, k1, pos, 0)
    assert first is not None
    torch.testing.assert_close(pe.attn_bias(q2, k2, pos, LAYERS - 1), first)


def test_a_layer_shared_bias_is_computed_once_per_forward() -> None:
    model = make_model("alibi")
    calls = []
    original = model.encoding.attn_bias

    def counting(*args: object) -> torch.Tensor:
        calls.append(args[-1])
        return original(*args)

    model.encoding.attn_bias = counting  # type: ignore[method-assign]
    model(torch.zeros(1, 8, dtype=torch.long))
    assert calls == [0]
    kerple = make_model("kerple")  # per-layer parameters: asked in every layer
    assert not kerple.encoding.bias_shared_by_layers


def test_position_memo_reuses_only_equal_shared_positions() -> None:
    calls: list[torch.Tensor] = []

    def fn(pos: torch.Tensor) -> torch.Tensor:
        calls.append(pos)
        return pos.float() * 2

    memo = PositionMemo(fn, size=2)
    a = memo(torch.arange(5))
    assert memo(torch.arange(5)) is a and len(calls) == 1
    memo(torch.arange(5) + 1)
    memo(torch.arange(6))
    assert len(calls) == 3
    memo(torch.arange(5))  # evicted: the memo keeps the last two
    assert len(calls) == 4
    per_sample = torch.arange(10).view(2, 5)
    memo(per_sample), memo(per_sample)
    assert len(calls) == 6  # per-sample positions are never stored
    assert torch.equal(memo(torch.arange(5) + 1), (torch.arange(5) + 1).float() * 2)


BY_ROWS = [n for n in encodings.available() if built(n).bias_by_rows]


def test_the_expected_encodings_give_their_bias_by_rows() -> None:
    assert BY_ROWS == ["cope"]


@pytest.mark.parametrize("name", BY_ROWS)
def test_a_block_of_rows_equals_that_block_of_the_full_bias(name: str) -> None:
    """What the capability promises, on the encoding itself: the bias of any block of query rows, computed from that
    block's scores alone, equals the same block of the full bias on every key the rows can see."""
    pe = built(name)
    with torch.no_grad():
        for p in pe.parameters():
            p.add_(0.3 * torch.randn_like(p))
    t, pos = 50, torch.arange(50)
    q, k = torch.randn(2, HEADS, t, D // HEADS), torch.randn(2, HEADS, t, D // HEADS)
    full = pe.attn_bias(q, k, pos, 1)
    for start, stop in ((0, 7), (7, 30), (30, 50), (49, 50)):
        scores = (q[:, :, start:stop] * pe.attn_scale) @ k[:, :, :stop].transpose(-1, -2)
        rows = pe.attn_bias(q[:, :, start:stop], k[:, :, :stop], pos, 1, rows=RowBlock(start, scores))
        visible = torch.ones(t, t, dtype=torch.bool).tril()[start:stop, :stop]
        expected = full[:, :, start:stop, :stop][..., visible]
        torch.testing.assert_close(rows[..., visible], expected, atol=1e-5, rtol=1e-5)


def test_a_bias_by_rows_is_never_built_whole_on_the_cpu() -> None:
    """Training on the CPU asks the encoding for its bias block by block (BLOCK_ROWS query rows, keys up to the block's
    end, ``rows=``), never for the whole (B, H, T, T) bias; on other devices the whole bias still serves SDPA."""
    model = make_model("cope")
    asked: list[tuple[int, int, int]] = []
    original = model.encoding.attn_bias

    def rows(*args: object, rows: RowBlock | None = None) -> torch.Tensor:
        if rows is None:
            raise AssertionError("the full bias was built")
        asked.append((rows.start, rows.scores.shape[-2], rows.scores.shape[-1]))
        return original(*args, rows=rows)  # type: ignore[arg-type]

    model.encoding.attn_bias = rows  # type: ignore[method-assign]
    model(torch.zeros(2, T, dtype=torch.long)).sum().backward()
    block = tm.BLOCK_ROWS
    per_layer = [(0, block, block), (block, block, 2 * block), (2 * block, T - 2 * block, T)]
    assert asked == per_layer * LAYERS


def combined_kernel(call: AttentionCall) -> KernelResult:
    """The kernel a combination with scores or weights of its own names, ``test_combined``: the model's blocked
    attention with them (:func:`pebench.models.kernels.blocked`, which composes them with the biases by rows)."""
    pe = call.pe
    raw = pe.scores(call.q, call.k, call.x, call.layer) if hasattr(pe, "scores") else None  # type: ignore[operator]
    return blocked(call, raw=raw, weights=getattr(pe, "weights", None))


@pytest.fixture
def kernel() -> Iterator[None]:
    """``test_combined`` registered for the test only (other tests list the registered kernels)."""
    register_kernel("test_combined")(combined_kernel)
    yield
    ATTENTION_KERNELS.pop("test_combined")


class Combined(TAPE):
    """TAPE's state carried from layer to layer, with every other role on q, k, the scores and the weights that the
    variant adds from :class:`Variants` (capabilities derived from them, a kernel of its own for scores or weights):
    the combinations no registered encoding has. The three transforms of q and k do not commute (a rotation by the
    state, a shift by position, a scale per token), so their order shows in the output."""

    name = "combined"

    def __init__(self, ctx: EncodingContext, **options: object) -> None:
        super().__init__(ctx, **options)
        self.shift = nn.Parameter(0.3 * torch.randn(ctx.head_dim))
        self.token_scale = nn.Parameter(0.3 * torch.randn(ctx.d_model, ctx.n_heads))
        self.key_weight = nn.Parameter(0.3 * torch.randn(ctx.d_model, ctx.n_heads))
        self.calls: list[str] = []

    def transform_qk(self, q, k, positions, layer, *, state=None):  # type: ignore[no-untyped-def]
        return self.qk(q, k, positions, layer, state, None)

    def qk(self, q, k, positions, layer, state, hidden):  # type: ignore[no-untyped-def]
        """The state's transform, then a shift by position, then (with ``hidden``) a scale per token."""
        self.calls.append("state")
        q, k = super().transform_qk(q, k, positions, layer, state=state)
        self.calls.append("positions")
        p = positions.float()
        p = 0.01 * (p[:, None, :, None] if p.dim() == 2 else p[None, None, :, None])
        q, k = q + p * self.shift, k - p * self.shift
        if hidden is None:
            return q, k
        self.calls.append("hidden")
        s = (1 + torch.tanh(hidden @ self.token_scale)).transpose(1, 2)[..., None]  # (B, H, T, 1): token t's own
        return q * s, k * (2 - s)

    def key_term(self, x: torch.Tensor) -> torch.Tensor:
        return (x @ self.key_weight).transpose(1, 2)[:, :, None, :]  # (B, H, 1, T): key j's own


class Variants:
    """What a combination adds to :class:`Combined`: a hook naming a keyword (its capability derived from it), or
    scores or weights of its own with the kernel that uses them."""

    def hidden_qk(self, q, k, positions, layer, *, state=None, hidden=None):  # type: ignore[no-untyped-def]
        return self.qk(q, k, positions, layer, state, hidden)

    def scores(self, q, k, x, layer):  # type: ignore[no-untyped-def]
        return q @ k.transpose(-1, -2) + self.key_term(x)

    def hidden_bias(self, q, k, positions, layer, *, hidden=None):  # type: ignore[no-untyped-def]
        if hidden is None:
            return None
        t = hidden.shape[1]
        return 0.5 * self.key_term(hidden).expand(-1, -1, t, -1)

    def weights(self, scores, start):  # type: ignore[no-untyped-def]
        w = torch.sigmoid(scores)  # 0 on the masked keys; each row from its own scores
        return w / (1 + w.sum(-1, keepdim=True))


VARIANTS = {  # variant -> the class attributes it sets
    "hidden": {"transform_qk": Variants.hidden_qk},
    "scores": {"scores": Variants.scores, "kernel": "test_combined"},
    "hidden_bias": {"attn_bias": Variants.hidden_bias},
    "weights": {"weights": Variants.weights, "kernel": "test_combined"},
}
COMBINATIONS = {  # the routes they take on the CPU: training, evaluation
    "state+hidden": ("hidden",),  # blocked on a state-widened v / SDPA with q and k padded
    "state+hidden+scores": ("hidden", "scores"),  # raw scores: blocked
    "state+hidden+scores+weights": ("hidden", "scores", "weights"),
    "state+scores+hidden_bias": ("scores", "hidden_bias"),  # by rows in training, raw scores
    "state+hidden_bias": ("hidden_bias",),  # by rows / SDPA with a mask, q and k padded
    "state+weights": ("weights",),  # blocked with the weights, q·kᵀ
}
CAPABILITIES = {"hidden": "qk_from_hidden", "hidden_bias": "reads_hidden"}


def combined_model(variants: tuple[str, ...], seed: int = 0) -> Transformer:
    torch.manual_seed(seed)
    cls = type("Combined", (Combined,), {k: v for variant in variants for k, v in VARIANTS[variant].items()})
    derived = {flag for flag in DERIVED_CAPABILITIES if getattr(cls, flag)}
    assert derived == {"carries_state", "qk_with_state", *(CAPABILITIES[v] for v in variants if v in CAPABILITIES)}
    model = Transformer(ModelConfig(vocab_size=VOCAB, d_model=D, n_layers=LAYERS, n_heads=HEADS),
                        cls(EncodingContext(d_model=D, n_heads=HEADS, n_layers=LAYERS, max_len=MAX_LEN))).train()
    with torch.no_grad():  # TAPE's zero-initialised updates moved, so the state changes from layer to layer
        for p in model.encoding.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return model


@pytest.mark.parametrize("combination", COMBINATIONS)
@pytest.mark.usefixtures("kernel")
def test_a_carried_state_combines_with_the_other_hooks_on_every_route(combination: str) -> None:
    """Every route (training on the CPU: blocked or by rows; evaluation: SDPA or blocked; packed seeds under vmap;
    the inspected maps) equals the dense reference, which applies the state's transform, the positions' and the
    hidden states' in that order (one transform_qk), and mixes the state's channels with the kernel's own weights of
    its own scores."""
    variants = COMBINATIONS[combination]
    model = combined_model(variants)
    tokens = torch.randint(0, VOCAB, (3, T), generator=torch.Generator().manual_seed(1))
    positions = torch.arange(T)[None, :] + torch.tensor([[0], [5], [40]])
    maps: list[torch.Tensor] = []
    theirs = reference_forward(model, tokens, positions, maps)
    model.encoding.calls.clear()
    ours = model(tokens, positions)
    per_layer = ["state", "positions"] + ["hidden"] * ("hidden" in variants)
    assert model.encoding.calls == per_layer * LAYERS  # in this order, in every layer
    torch.testing.assert_close(ours, theirs, atol=2e-5, rtol=1e-4)
    g_ours, g_theirs = grads(model, ours), grads(model, reference_forward(model, tokens, positions))
    assert g_ours.keys() == g_theirs.keys() and any(k.startswith("encoding.mix") for k in g_ours)
    for key in g_ours:
        torch.testing.assert_close(g_ours[key], g_theirs[key], atol=1e-5, rtol=1e-3, msg=f"grad of {key}")
    with torch.no_grad():
        torch.testing.assert_close(model.eval()(tokens, positions), theirs, atol=2e-5, rtol=1e-4)
        for layer in range(LAYERS):
            got = model.attention_maps(tokens, positions, layer=layer)
            torch.testing.assert_close(got, maps[layer], atol=1e-5, rtol=1e-4)
    models = [combined_model(variants, seed) for seed in (0, 1)]  # packed seeds: one vmapped forward of both
    params, buffers = stack_module_state(models)
    packed = vmap(lambda p, b: functional_call(models[0], {**p, **b}, (tokens, positions)))(params, buffers)
    for k, m in enumerate(models):
        torch.testing.assert_close(packed[k], reference_forward(m, tokens, positions), atol=2e-5, rtol=1e-4)
