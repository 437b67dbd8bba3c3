"""PaTH attention (Yang et al. 2025, arXiv:2505.16381) from its formula: s_ij = q_iᵀ H_i ⋯ H_{j+1} k_j with
H_t = I - β_t w_t w_tᵀ, w_t the L2-normalised short convolution (SiLU) of a low-rank projection of x_t and
β_t = 2σ(u·x_t + c). The references are explicit float64 matrix products per (i, j) and Python loops, and the
former per-token blocked form (:func:`sequential_scores`), never the chunked code under test."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from pebench import encodings
from pebench.encodings import EncodingContext
from pebench.encodings.path import block_size, path_score_rows, path_scores
from pebench.encodings.precision import upcast
from pebench.errors import OptionError
from pebench.models.kernels import ATTENTION_KERNELS, AttentionCall, KernelResult, blocked, register_kernel
from pebench.models.transformer import ModelConfig, Transformer

VOCAB, D, HEADS, LAYERS = 17, 32, 4, 2
CTX = EncodingContext(d_model=D, n_heads=HEADS, n_layers=LAYERS, max_len=128)


def built(options: dict | None = None) -> encodings.PositionalEncoding:
    torch.manual_seed(0)
    return encodings.build("path", CTX, options)


def naive_scores(q: torch.Tensor, k: torch.Tensor, w: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    """The paper's logit k_jᵀ (H_{j+1} H_{j+2} ⋯ H_i) q_i for one head ``(T, d)``, with every H_t an explicit
    float64 matrix and the product multiplied out for each (i, j); 0 above the diagonal."""
    q, k, w, beta = q.double(), k.double(), w.double(), beta.double()
    t, d = q.shape
    h = [torch.eye(d, dtype=torch.float64) - beta[s] * torch.outer(w[s], w[s]) for s in range(t)]
    out = torch.zeros(t, t, dtype=torch.float64)
    for i in range(t):
        for j in range(i + 1):
            product = torch.eye(d, dtype=torch.float64)
            for s in range(j + 1, i + 1):
                product = product @ h[s]
            out[i, j] = k[j] @ product @ q[i]
    return out


def dense_scores(q: torch.Tensor, k: torch.Tensor, w: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    """The formula with explicit float64 matrices, batched over the leading dims of ``(..., T, d)``: for each query
    i, P = H_{j+1} ⋯ H_i built by left products H_j P while j falls, s_ij = k_jᵀ P q_i; 0 above the diagonal."""
    q, k, w, beta = q.double(), k.double(), w.double(), beta.double()
    t, d = q.shape[-2:]
    h = torch.eye(d, dtype=torch.float64) - beta[..., None, None] * w[..., :, None] * w[..., None, :]
    out = torch.zeros(*q.shape[:-2], t, t, dtype=torch.float64)
    for i in range(t):
        product = torch.eye(d, dtype=torch.float64).expand(*q.shape[:-2], d, d)
        for j in range(i, -1, -1):
            out[..., i, j] = (k[..., j, None, :] @ product @ q[..., i, :, None])[..., 0, 0]
            product = h[..., j, :, :] @ product
    return out


def sequential_scores(q: torch.Tensor, k: torch.Tensor, w: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    """The former ``path_scores`` (blocks of about √T tokens, one matrix-vector step per token inside a block): the
    same scores by another order of products."""
    t, d = q.shape[-2:]
    c = max(1, min(t, max(4, math.isqrt(max(t - 1, 0)) + 1)))
    nb = -(-t // c)
    pad = nb * c - t
    q, k, w = (F.pad(upcast(a), (0, 0, 0, pad)) for a in (q, k, w))
    bw = F.pad(upcast(beta), (0, pad))[..., None] * w
    qb, kb, wb, bwb = (a.unflatten(-2, (nb, c)) for a in (q, k, w, bw))
    state = torch.cat([qb, torch.eye(d, dtype=q.dtype).expand(*qb.shape[:-2], d, d)], -2)
    row = torch.arange(c + d)[:, None]
    outs = []
    for s in reversed(range(c)):  # queries i >= s of each block carried to s, and the block's product
        outs.append(state @ kb[..., s, :, None])
        active = ((row >= s) | (row >= c)).to(state.dtype)
        state = state - (state @ wb[..., s, :, None]) * active * bwb[..., s, None, :]
    out = torch.cat(outs[::-1], -1)
    inside, keys = out[..., :c, :], out[..., c:, :]
    back, product = state[..., :c, :], state[..., c:, :]
    strips: list[torch.Tensor | None] = [None] * nb
    carried = back[..., nb - 1, :, :]
    for b in range(nb - 1, 0, -1):
        strips[b - 1] = carried @ keys[..., b - 1, :, :]
        carried = torch.cat([back[..., b - 1, :, :], carried @ product[..., b - 1, :, :]], -2)
    columns = []
    for b in range(nb):
        col = inside[..., b, :, :] if strips[b] is None else torch.cat([inside[..., b, :, :], strips[b]], -2)
        columns.append(F.pad(col, (0, 0, b * c, 0)))
    return torch.cat(columns, -1)[..., :t, :t]


def random_case(t: int, d: int, seed: int) -> tuple[torch.Tensor, ...]:
    gen = torch.Generator().manual_seed(seed)
    q, k = torch.randn(t, d, generator=gen), torch.randn(t, d, generator=gen)
    w = F.normalize(torch.randn(t, d, generator=gen), dim=-1)
    return q, k, w, 2 * torch.rand(t, generator=gen)


@pytest.mark.parametrize("block", [1, 3, 5, None, 23])
def test_scores_equal_the_product_of_householder_matrices(block):
    q, k, w, beta = random_case(23, 6, seed=0)
    visible = torch.ones(23, 23, dtype=torch.bool).tril()
    got = path_scores(q, k, w, beta, block).double()
    torch.testing.assert_close(got[visible], naive_scores(q, k, w, beta)[visible], atol=1e-5, rtol=1e-5)


def test_a_reflection_by_hand():
    # d = 2, every w_t = e_1 and β_t = 2: H = diag(-1, 1), so s_ij = q·diag((-1)^(i-j), 1)·k; with q = (1, 2) and
    # k = (3, 4) everywhere: 3 + 8 = 11 at even distances, -3 + 8 = 5 at odd ones
    t = 6
    q, k = torch.tensor([1.0, 2.0]).expand(t, 2), torch.tensor([3.0, 4.0]).expand(t, 2)
    w, beta = torch.tensor([1.0, 0.0]).expand(t, 2), torch.full((t,), 2.0)
    got = path_scores(q, k, w, beta, block=4)
    for i in range(t):
        for j in range(i + 1):
            assert float(got[i, j]) == (11.0 if (i - j) % 2 == 0 else 5.0), (i, j)


def test_scores_are_causal():
    # row i reads q_i, and k_j, w_t, β_t for j, t <= i only: changing everything after i leaves row i alone
    q, k, w, beta = random_case(30, 8, seed=1)
    full = path_scores(q, k, w, beta)
    for cut in (0, 6, 17, 28):
        q2, k2, w2, beta2 = random_case(30, 8, seed=2)
        keep = slice(0, cut + 1)
        q2[keep], k2[keep], w2[keep], beta2[keep] = q[keep], k[keep], w[keep], beta[keep]
        other = path_scores(q2, k2, w2, beta2)
        torch.testing.assert_close(other[: cut + 1, : cut + 1], full[: cut + 1, : cut + 1])


def test_the_chunks_are_at_most_the_power_of_two_at_least_the_square_root_of_twice_the_length_and_equal():
    lengths = (1, 3, 16, 17, 80, 128, 129, 256, 512, 513, 1024, 2049)
    assert [block_size(t) for t in lengths] == [1, 3, 16, 9, 16, 16, 26, 32, 32, 57, 64, 121]


def batched_case(shape: tuple[int, ...], t: int, d: int, seed: int, beta: str, dtype: torch.dtype):
    gen = torch.Generator().manual_seed(seed)
    q, k, w = (torch.randn(*shape, t, d, generator=gen, dtype=torch.float64) for _ in range(3))
    b = {"random": 2 * torch.rand(*shape, t, generator=gen, dtype=torch.float64), "zero": torch.zeros(*shape, t),
         "two": torch.full((*shape, t), 2.0), "one": torch.ones(*shape, t)}[beta]  # fmt: skip
    return tuple(a.to(dtype) for a in (q, k, F.normalize(w, dim=-1), b))


VISIBLE = {t: torch.ones(t, t, dtype=torch.bool).tril() for t in (1, 7, 16, 17, 40)}


@pytest.mark.parametrize("beta", ["random", "zero", "two", "one"])  # one: H_t a projection, not invertible
@pytest.mark.parametrize("t", [1, 7, 16, 17, 40])
@pytest.mark.parametrize("block", [None, 1, 4, 16])
def test_float64_scores_equal_the_dense_product_and_the_sequential_form(t, block, beta):
    q, k, w, b = batched_case((2, 3), t, 5, seed=t, beta=beta, dtype=torch.float64)
    got = path_scores(q, k, w, b, block)
    assert got.dtype == torch.float64 and got.shape == (2, 3, t, t) and got.isfinite().all()
    want, visible = dense_scores(q, k, w, b), VISIBLE[t]
    scale = float(want.abs().max())
    for reference in (want, sequential_scores(q, k, w, b)):
        torch.testing.assert_close(got[..., visible], reference[..., visible], rtol=1e-12, atol=1e-12 * scale)
    if beta == "zero":
        torch.testing.assert_close(got[..., visible], (q @ k.mT)[..., visible], rtol=1e-12, atol=1e-12 * scale)


@pytest.mark.parametrize("t", [1, 17, 40])
def test_float32_scores_equal_the_dense_product_and_the_sequential_form(t):
    q, k, w, b = batched_case((2, 3), t, 8, seed=7, beta="random", dtype=torch.float32)
    got = path_scores(q, k, w, b)
    assert got.dtype == torch.float32
    visible = VISIBLE[t]
    torch.testing.assert_close(got[..., visible], sequential_scores(q, k, w, b)[..., visible], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got.double()[..., visible], dense_scores(q, k, w, b)[..., visible], atol=1e-5,
                               rtol=1e-5)  # fmt: skip


def test_gradients_equal_the_dense_products():
    q, k, w, b = (a.requires_grad_() for a in batched_case((2,), 5, 3, seed=8, beta="random", dtype=torch.float64))
    assert torch.autograd.gradcheck(lambda *a: path_scores(*a, block=2).tril(), (q, k, w, b), fast_mode=True)
    q, k, w, b = (a.requires_grad_() for a in batched_case((2, 2), 13, 6, seed=9, beta="random", dtype=torch.float64))
    weights = torch.randn(13, 13, dtype=torch.float64, generator=torch.Generator().manual_seed(10)).tril()
    got = torch.autograd.grad((path_scores(q, k, w, b, 5) * weights).sum(), (q, k, w, b))  # 3 chunks, one padded
    want = torch.autograd.grad((dense_scores(q, k, w, b) * weights).sum(), (q, k, w, b))
    for g, r in zip(got, want, strict=True):
        torch.testing.assert_close(g, r, rtol=1e-12, atol=1e-12 * float(r.abs().max()))


def test_vmapped_seeds_and_bfloat16_autocast():
    # packed seeds run the model under vmap; CUDA runs under bf16 autocast, where the triangular solves (no bfloat16
    # kernel) must still get float32
    q, k, w, b = batched_case((3, 2), 17, 8, seed=11, beta="random", dtype=torch.float64)
    torch.testing.assert_close(torch.func.vmap(path_scores)(q, k, w, b), path_scores(q, k, w, b), rtol=1e-12,
                               atol=1e-12)  # fmt: skip
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = path_scores(*(a.float() for a in (q, k, w, b)))
    want, visible = dense_scores(q, k, w, b), VISIBLE[17]
    assert got.isfinite().all()
    torch.testing.assert_close(got.double()[..., visible], want[..., visible], rtol=0, atol=0.05 * want.abs().max())


def reference_transforms(pe: encodings.PositionalEncoding, x: torch.Tensor, layer: int) -> tuple[torch.Tensor, ...]:
    """w and β of one sequence ``(T, d_model)`` from the parametrisation, token by token in float64: z_t =
    W_up W_down x_t, the causal convolution Σ_s c_s z_{t-width+1+s} (z before the first token is 0), SiLU, L2 per
    head; β_t = 2σ(u·x_t + c)."""
    width, heads = pe.opts["conv"], pe.ctx.n_heads
    down, up = pe.w_down[layer].detach().double(), pe.w_up[layer].detach().double()
    z = [up @ (down @ x[t].double()) for t in range(x.shape[0])]
    ws, betas = [], []
    for t in range(x.shape[0]):
        if width:
            kernel = pe.w_conv[layer].detach().double()
            conv = sum(kernel[:, s] * z[t - width + 1 + s] for s in range(width) if t - width + 1 + s >= 0)
            zt = conv * torch.sigmoid(conv)
        else:
            zt = z[t]
        per_head = zt.view(heads, -1)
        ws.append(per_head / per_head.norm(dim=-1, keepdim=True))
        u, c = pe.beta_weight[layer].detach().double(), pe.beta_bias[layer].detach().double()
        betas.append(2 / (1 + torch.exp(-(u @ x[t].double() + c))))
    return torch.stack(ws, 1), torch.stack(betas, 1)  # (H, T, d_h), (H, T)


@pytest.mark.parametrize("conv", [3, 0])
def test_the_encodings_scores_follow_the_parametrisation(conv):
    pe = built({"conv": conv, "rank": 4})
    with torch.no_grad():
        pe.beta_bias.add_(torch.randn_like(pe.beta_bias))
        pe.beta_weight.mul_(30)
    gen = torch.Generator().manual_seed(4)
    t, dh = 9, D // HEADS
    x = torch.randn(2, t, D, generator=gen)
    q, k = torch.randn(2, HEADS, t, dh, generator=gen), torch.randn(2, HEADS, t, dh, generator=gen)
    got = pe.scores(q, k, x, 1).detach().double()
    visible = torch.ones(t, t, dtype=torch.bool).tril()
    for b in range(2):
        w, beta = reference_transforms(pe, x[b], 1)
        for h in range(HEADS):
            want = naive_scores(q[b, h], k[b, h], w[h], beta[h])
            torch.testing.assert_close(got[b, h][visible], want[visible], atol=1e-5, rtol=1e-4)


def test_beta_zero_is_attention_without_positions():
    # β_t = 2σ(-10^4) = 0: every H_t is the identity, the scores are q·kᵀ and the model is NoPE's with its weights
    torch.manual_seed(0)
    cfg = ModelConfig(vocab_size=VOCAB, d_model=D, n_layers=LAYERS, n_heads=HEADS)
    model = Transformer(cfg, encodings.build("path", CTX)).eval()
    with torch.no_grad():
        model.encoding.beta_bias.fill_(-1e4)
        for block in model.blocks:  # sharper attention than at initialisation, where it is almost uniform
            block.attn.qkv.weight.mul_(10)
    nope = Transformer(cfg, encodings.build("nope", CTX)).eval()
    nope.load_state_dict({n: p for n, p in model.state_dict().items() if not n.startswith("encoding.")})
    tokens = torch.randint(0, VOCAB, (2, 40), generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        torch.testing.assert_close(model(tokens), nope(tokens), atol=1e-5, rtol=1e-5)
        model.encoding.beta_bias.fill_(0.0)  # β = 1: the transforms matter
        assert (model(tokens) - nope(tokens)).abs().max() > 1e-2


def test_initialisation_and_options():
    pe = built()
    assert set(pe.opts) == {"rank", "conv"} and (pe.opts["rank"], pe.opts["conv"]) == (32, 3)
    assert pe.w_down.shape == (LAYERS, 32, D) and pe.w_up.shape == (LAYERS, D, 32)
    assert pe.w_conv.shape == (LAYERS, D, 3) and float(pe.w_conv.detach().abs().max()) <= 3**-0.5
    assert (pe.beta_bias == 0).all()  # β starts near 2σ(0) = 1
    assert not hasattr(built({"conv": 0}), "w_conv")
    with pytest.raises(OptionError, match=r"^encoding path: option conv=17 is out of range; valid: int in \[0, 16\]$"):
        built({"conv": 17})


def test_the_model_uses_the_scores_in_every_layer_on_every_route_and_ignores_positions():
    torch.manual_seed(0)
    model = Transformer(ModelConfig(vocab_size=VOCAB, d_model=D, n_layers=LAYERS, n_heads=HEADS),
                        encodings.build("path", CTX))  # fmt: skip
    tokens = torch.randint(0, VOCAB, (2, 70), generator=torch.Generator().manual_seed(6))  # two query blocks
    asked = []
    original = model.encoding.transforms  # read by PaTH's kernel in every layer (its directions and β)

    def spy(x: torch.Tensor, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
        asked.append(layer)
        return original(x, layer)

    model.encoding.transforms = spy  # type: ignore[method-assign]
    trained = model.train()(tokens)
    with torch.no_grad():
        evaluated = model.eval()(tokens)
        torch.testing.assert_close(evaluated, trained.detach(), atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(model(tokens, torch.arange(70) + 29), evaluated)
    assert asked == [0, 1] * 3
    maps = model.attention_maps(tokens, layer=0)  # the inspected maps: softmax of the PaTH scores
    x, _ = model.hidden_states(tokens)
    block = model.blocks[0]
    h = block.attn_norm(x)
    q, k, _ = block.attn.qkv(h).view(2, 70, 3, HEADS, D // HEADS).permute(2, 0, 3, 1, 4)
    w, beta = model.encoding.transforms(h, 0)
    for b, head in ((0, 1), (1, 3)):
        want = naive_scores(q[b, head].detach(), k[b, head].detach(), w[b, head].detach(), beta[b, head].detach())
        want = (want * (D // HEADS) ** -0.5).masked_fill(~torch.ones(70, 70, dtype=torch.bool).tril(), -math.inf)
        torch.testing.assert_close(maps[b, head].double(), want.softmax(-1), atol=1e-5, rtol=1e-4)


def test_the_scores_by_rows_are_those_of_the_whole_scores_and_the_kernel_attends_as_the_blocked_attention():
    """PaTH's kernel (pebench/encodings/path.py) reads its scores by chunks of query rows: each chunk holds exactly
    the entries of :func:`path_scores` for its rows and every key up to its chunk's end (so every key a row can see),
    and the layer's output equals that of the model's blocked attention on the whole scores (a kernel calling
    :func:`pebench.models.kernels.blocked` with :meth:`PaTH.scores`), forward and backward, in training and
    evaluation."""
    g = torch.Generator().manual_seed(3)
    for t in (5, 16, 70, 129):
        q, k, w = (torch.randn(2, 3, t, 8, generator=g, dtype=torch.float64) for _ in range(3))
        beta = 2 * torch.rand(2, 3, t, generator=g, dtype=torch.float64)
        w = F.normalize(w, dim=-1)
        whole, rows, start = path_scores(q, k, w, beta), path_score_rows(q, k, w, beta), 0
        for row in rows:
            stop = start + row.shape[-2]
            assert stop <= row.shape[-1] <= t and torch.equal(row, whole[..., start:stop, : row.shape[-1]])
            start = stop
        assert start == t
    torch.manual_seed(0)
    model = Transformer(ModelConfig(vocab_size=VOCAB, d_model=D, n_layers=LAYERS, n_heads=HEADS),
                        encodings.build("path", CTX))  # fmt: skip
    tokens = torch.randint(0, VOCAB, (2, 70), generator=g)
    outputs = {}

    @register_kernel("test_path_whole")
    def whole_scores(call: AttentionCall) -> KernelResult:  # the model's blocked attention on PaTH's whole scores
        return blocked(call, raw=call.pe.scores(call.q, call.k, call.x, call.layer))  # type: ignore[operator]

    try:
        for kernel in ("path", "test_path_whole"):
            model.encoding.kernel = kernel  # type: ignore[misc]
            model.zero_grad()
            out = model.train()(tokens)
            out.square().mean().backward()
            with torch.no_grad():
                outputs[kernel] = (out.detach(), model.eval()(tokens), [p.grad.clone() for p in model.parameters()])
    finally:
        ATTENTION_KERNELS.pop("test_path_whole")
    torch.testing.assert_close(outputs["path"], outputs["test_path_whole"], atol=1e-6, rtol=1e-5)
