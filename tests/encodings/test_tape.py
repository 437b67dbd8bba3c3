"""TAPE (Zhu et al. 2025, arXiv:2501.00712), from its formulas: per token, head and frequency pair a feature pair
e = (c, s) acting on (q_2l, q_2l+1) as the block E(e) = [[c, -s], [s, c]], starting at RoPE's (cos pθ_l, sin pθ_l);
scores Σ_l q_lᵀ E(e_i)ᵀ E(e_j) k_l; after each layer e ← e + W_mix·(A e), then e ← e + W_down(silu(W_x y) ⊙ W_up e).
The references are explicit 2x2 matrices and loops in float64 or numbers worked out by hand, never the code under
test; the parameters are moved off their zero initialisation wherever the updates matter."""

from __future__ import annotations

import math

import pytest
import torch

from pebench import encodings
from pebench.encodings import EncodingContext
from pebench.errors import OptionError
from pebench.models import state as pe_state
from pebench.models.transformer import ModelConfig, Transformer
from pebench.testing import check_encoding

VOCAB, D, HEADS, LAYERS, T = 17, 32, 4, 3, 12
HD = D // HEADS
CTX = EncodingContext(d_model=D, n_heads=HEADS, n_layers=LAYERS, max_len=128)


def perturb(module: torch.nn.Module, seed: int = 5, scale: float = 0.3) -> None:
    """Move every parameter of the encoding off its initial value (W_mix and W_up start at 0)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.add_(scale * torch.randn(p.shape, generator=gen))


def make_model(seed: int = 0, moved: bool = True, layers: int = LAYERS, name: str = "tape") -> Transformer:
    torch.manual_seed(seed)
    cfg = ModelConfig(vocab_size=VOCAB, d_model=D, n_layers=layers, n_heads=HEADS)
    ctx = EncodingContext(d_model=D, n_heads=HEADS, n_layers=layers, max_len=128)
    model = Transformer(cfg, encodings.build(name, ctx)).eval()
    if moved:
        perturb(model.encoding)
    return model


def tokens(batch: int = 2, length: int = T, seed: int = 1) -> torch.Tensor:
    return torch.randint(0, VOCAB, (batch, length), generator=torch.Generator().manual_seed(seed))


def block(e: torch.Tensor) -> torch.Tensor:
    """E(e) = [[c, -s], [s, c]] for one pair e = (c, s), float64."""
    c, s = float(e[0]), float(e[1])
    return torch.tensor([[c, -s], [s, c]], dtype=torch.float64)


def reference_scores(q: torch.Tensor, k: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
    """Σ_l q_{i,l}ᵀ E(e_{i,l})ᵀ E(e_{j,l}) k_{j,l} for one head: q, k ``(T, d)``, state ``(T, d)`` pairs interleaved."""
    t, d = q.shape
    out = torch.zeros(t, t, dtype=torch.float64)
    for i in range(t):
        for j in range(t):
            for pair in range(d // 2):
                sl = slice(2 * pair, 2 * pair + 2)
                qi, kj = q[i, sl].double(), k[j, sl].double()
                out[i, j] += qi @ block(state[i, sl]).T @ block(state[j, sl]) @ kj
    return out


def scores(pe: encodings.PositionalEncoding, q: torch.Tensor, k: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
    qt, kt = pe.transform_qk(q, k, torch.arange(q.shape[-2]), 0, state=state)
    return (qt @ kt.transpose(-1, -2)).double()


def rotate(state: torch.Tensor, angles: torch.Tensor) -> torch.Tensor:
    """Every pair (c, s) of frequency l rotated by ``angles[l]``, the same for every token and head."""
    c, s = state[..., 0::2], state[..., 1::2]
    cos, sin = torch.cos(angles), torch.sin(angles)
    return torch.stack((c * cos - s * sin, c * sin + s * cos), dim=-1).flatten(-2)


# -- initial features: RoPE ------------------------------------------------------------------------------------------


def test_the_initial_features_give_ropes_scores_worked_out_by_hand():
    # one head of width 2: a single pair with θ_0 = base^0 = 1, positions 0, 1, 2. q = (1, 0), k = (0, 1):
    # q̃_i = R(i)·q = (cos i, sin i), k̃_j = R(j)·k = (-sin j, cos j), q̃_i·k̃_j = sin i cos j - cos i sin j = sin(i - j)
    pe = encodings.build("tape", EncodingContext(d_model=2, n_heads=1, n_layers=2, max_len=8))
    state = pe.init_state(torch.arange(3), 1)
    assert state.shape == (1, 1, 3, 2)
    torch.testing.assert_close(state[0, 0, 2], torch.tensor([-0.4161468365, 0.9092974268]))  # (cos 2, sin 2)
    q = torch.tensor([1.0, 0.0]).expand(1, 1, 3, 2)
    k = torch.tensor([0.0, 1.0]).expand(1, 1, 3, 2)
    s1, s2 = 0.8414709848, 0.9092974268  # sin 1, sin 2
    expected = torch.tensor([[0.0, -s1, -s2], [s1, 0.0, -s1], [s2, s1, 0.0]], dtype=torch.float64)
    torch.testing.assert_close(scores(pe, q, k, state)[0, 0], expected, atol=1e-6, rtol=0)
    c1, c2 = 0.5403023059, -0.4161468365  # q = k = (1, 0): cos(i - j)
    expected = torch.tensor([[1.0, c1, c2], [c1, 1.0, c1], [c2, c1, 1.0]], dtype=torch.float64)
    torch.testing.assert_close(scores(pe, q, q, state)[0, 0], expected, atol=1e-6, rtol=0)


def test_the_initial_scores_are_ropes_for_every_frequency_and_head():
    # E(e⁰_i)ᵀ E(e⁰_j) = R(p_i θ_l)ᵀ R(p_j θ_l), θ_l = 10000^(-2l/d), written with explicit rotation matrices
    pe = encodings.build("tape", CTX)
    pos = torch.tensor([0, 3, 4, 9, 30, 31])
    gen = torch.Generator().manual_seed(2)
    q, k = torch.randn(1, HEADS, 6, HD, generator=gen), torch.randn(1, HEADS, 6, HD, generator=gen)
    got = scores(pe, q, k, pe.init_state(pos, 1))
    for h in range(HEADS):
        want = torch.zeros(6, 6, dtype=torch.float64)
        for i in range(6):
            for j in range(6):
                for pair in range(HD // 2):
                    theta = 10000.0 ** (-2 * pair / HD)
                    ri, rj = (torch.tensor([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]],
                                           dtype=torch.float64) for a in (float(pos[i]) * theta, float(pos[j]) * theta))
                    sl = slice(2 * pair, 2 * pair + 2)
                    want[i, j] += q[0, h, i, sl].double() @ ri.T @ rj @ k[0, h, j, sl].double()
        torch.testing.assert_close(got[0, h], want, atol=1e-5, rtol=1e-5)


# -- scores from any features, and their invariance ----------------------------------------------------------------


def test_scores_follow_the_block_formula_for_any_features():
    pe = encodings.build("tape", CTX)
    gen = torch.Generator().manual_seed(3)
    q, k, state = (torch.randn(2, HEADS, 5, HD, generator=gen) for _ in range(3))  # pairs far from unit rotations
    got = scores(pe, q, k, state)
    for b, h in ((0, 0), (1, 3)):
        torch.testing.assert_close(got[b, h], reference_scores(q[b, h], k[b, h], state[b, h]), atol=1e-5, rtol=1e-5)


def test_scores_are_invariant_to_a_rotation_of_every_pair_of_a_frequency_and_not_to_a_reflection():
    pe = encodings.build("tape", CTX)
    gen = torch.Generator().manual_seed(4)
    q, k, state = (torch.randn(2, HEADS, 7, HD, generator=gen) for _ in range(3))
    angles = torch.tensor([0.3, -2.0, 1.1, 4.0])  # one angle per frequency pair
    torch.testing.assert_close(scores(pe, q, k, rotate(state, angles)), scores(pe, q, k, state), atol=1e-5, rtol=1e-5)
    reflected = state.clone()
    reflected[..., 1::2] *= -1  # (c, s) -> (c, -s) flips a×b: the test can tell
    assert (scores(pe, q, k, reflected) - scores(pe, q, k, state)).abs().max() > 1e-2


# -- the updates -----------------------------------------------------------------------------------------------------


def causal_weights(gen: torch.Generator, b: int = 2, t: int = 6) -> torch.Tensor:
    z = torch.randn(b, HEADS, t, t, generator=gen).masked_fill(~torch.ones(t, t, dtype=torch.bool).tril(), -math.inf)
    return z.softmax(-1)


def test_the_update_follows_its_formula():
    pe = encodings.build("tape", CTX)
    perturb(pe)
    gen = torch.Generator().manual_seed(6)
    state, a, y = torch.randn(2, HEADS, 6, HD, generator=gen), causal_weights(gen), torch.randn(2, 6, D, generator=gen)
    layer = 1
    got = pe.update_state(state, a @ state, y, layer).detach().double()
    mix, up, gate_w, down = (w[layer].detach().double() for w in (pe.mix_weight, pe.up_weight, pe.gate_weight,
                                                                  pe.down_weight))  # fmt: skip
    e, a64, y64 = state.double(), a.double(), y.double()
    p_width = up.shape[0]
    assert p_width == 4 * HEADS  # the authors' position_size: 4 per head
    for b in range(2):
        for i in range(6):
            gate = [float(gate_w[p] @ y64[b, i]) for p in range(p_width)]
            gate = [g / (1.0 + math.exp(-g)) for g in gate]  # silu
            for c in range(HD):
                mixed = [float(e[b, h, i, c]) + sum(float(mix[h, g]) * sum(float(a64[b, g, i, j] * e[b, g, j, c])
                                                                            for j in range(i + 1))
                                                    for g in range(HEADS)) for h in range(HEADS)]  # fmt: skip
                for h in range(HEADS):
                    want = mixed[h] + sum(float(down[h, p]) * gate[p] * sum(float(up[p, g]) * mixed[g]
                                                                            for g in range(HEADS))
                                          for p in range(p_width))  # fmt: skip
                    assert abs(float(got[b, h, i, c]) - want) < 1e-4 * max(1.0, abs(want)), (b, h, i, c)
    assert pe.update_state(state, None, y, LAYERS - 1) is state  # the last layer's update would feed no score
    assert pe.state_values(state, LAYERS - 1) is None and pe.state_values(state, 0) is state


def test_the_update_commutes_with_rotations_and_token_permutations():
    pe = encodings.build("tape", CTX)
    perturb(pe)
    gen = torch.Generator().manual_seed(7)
    state, a, y = torch.randn(2, HEADS, 6, HD, generator=gen), causal_weights(gen), torch.randn(2, 6, D, generator=gen)
    angles = torch.tensor([1.0, -0.4, 2.5, 0.2])
    with torch.no_grad():
        new = pe.update_state(state, a @ state, y, 0)
        rotated = rotate(state, angles)
        torch.testing.assert_close(pe.update_state(rotated, a @ rotated, y, 0), rotate(new, angles),
                                   atol=1e-5, rtol=1e-5)  # fmt: skip
        perm = torch.tensor([3, 0, 5, 1, 4, 2])  # tokens reordered (the attention weights with them)
        pa = a[:, :, perm][..., perm]
        permuted = pe.update_state(state[:, :, perm], pa @ state[:, :, perm], y[:, perm], 0)
        torch.testing.assert_close(permuted, new[:, :, perm], atol=1e-5, rtol=1e-5)
        assert (new - state).abs().max() > 1e-2  # the update does move the features


# -- in the model ----------------------------------------------------------------------------------------------------


def layer_states(model: Transformer, x: torch.Tensor, pos: torch.Tensor | None = None) -> list[torch.Tensor]:
    """The state entering each layer of one forward pass."""
    seen: list[torch.Tensor] = []
    pe = model.encoding
    original = pe.update_state

    def spy(state, attended, ffn_out, layer):  # noqa: ANN001, ANN202
        seen.append(state)
        return original(state, attended, ffn_out, layer)

    pe.update_state = spy  # type: ignore[method-assign]
    try:
        with torch.no_grad():
            model(x, pos)
    finally:
        del pe.update_state
    return seen


def test_the_state_is_updated_in_every_layer_and_feeds_the_next_layers_scores():
    model, x = make_model(), tokens()
    states = layer_states(model, x)
    assert len(states) == LAYERS
    assert (states[1] - states[0]).abs().max() > 1e-2 and (states[2] - states[1]).abs().max() > 1e-2
    with torch.no_grad():
        before = [model.attention_maps(x, layer=n) for n in range(LAYERS)]
        model.encoding.mix_weight[0].add_(0.5)  # used only in the update after layer 0
        after = [model.attention_maps(x, layer=n) for n in range(LAYERS)]
    torch.testing.assert_close(after[0], before[0], atol=0, rtol=0)
    assert (after[1] - before[1]).abs().max() > 1e-3 and (after[2] - before[2]).abs().max() > 1e-3
    fresh = make_model(moved=False)  # the authors' init (W_mix = W_up = 0): the features stay RoPE's in every layer
    first, *later = layer_states(fresh, x)
    for s in later:
        torch.testing.assert_close(s, first.expand_as(s), atol=0, rtol=0)


def test_at_initialisation_the_model_is_rope():
    tape, rope = make_model(moved=False), make_model(moved=False, name="rope")
    rope.load_state_dict({k: v for k, v in tape.state_dict().items() if not k.startswith("encoding.")})
    x = tokens()
    with torch.no_grad():
        torch.testing.assert_close(tape(x), rope(x), atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("train", [False, True], ids=["eval", "train"])
def test_causal_with_moved_parameters(train: bool):
    model = make_model().train(train)
    x = tokens(3, 20)
    y = x.clone()
    y[:, 9:] = (y[:, 9:] + 1) % VOCAB
    with torch.set_grad_enabled(train):
        a, b = model(x), model(y)
    torch.testing.assert_close(a[:, :9], b[:, :9], atol=1e-5, rtol=0)
    assert (a[:, 9:] - b[:, 9:]).abs().max() > 1e-4


def test_shift_invariant_with_moved_parameters_and_per_sample_positions():
    model, x = make_model(), tokens(2, 10)
    with torch.no_grad():
        base = model(x, torch.arange(10))
        torch.testing.assert_close(model(x, torch.arange(10)[None] + torch.tensor([[17], [60]])), base,
                                   atol=2e-5, rtol=1e-4)  # fmt: skip


def test_same_seed_same_outputs_and_a_layer_without_its_state_is_a_one_line_error():
    x = tokens()
    with torch.no_grad():
        torch.testing.assert_close(make_model(3)(x), make_model(3)(x), atol=0, rtol=0)
    model = make_model()
    h, pos = model.hidden_states(x)
    with pytest.raises(ValueError, match="carries a state from layer to layer") as err:
        model.blocks[0](h, pos, model.encoding)
    assert "\n" not in str(err.value)
    shared = pe_state.scratch(model.encoding, pos, 2)
    assert shared["state"].shape == (1, HEADS, T, HD)


def test_options_and_wrappers():
    with pytest.raises(OptionError, match=r"mlp_ratio.*int in \[1, inf\)"):
        encodings.build("tape", CTX, {"mlp_ratio": 0})
    assert encodings.build("tape", CTX, {"mlp_ratio": 2}).up_weight.shape == (LAYERS - 1, 2 * HEADS, HEADS)
    x = tokens()
    for name, opts in (("randomized_tape", {}), ("ssmax_tape", {}), ("drope", {"base": "tape"})):
        torch.manual_seed(0)
        model = Transformer(ModelConfig(vocab_size=VOCAB, d_model=D, n_layers=LAYERS, n_heads=HEADS),
                            encodings.build(name, CTX, opts)).eval()  # fmt: skip
        assert model.encoding.carries_state and model.encoding.qk_with_state  # the wrapped encoding's capabilities
        with torch.no_grad():
            assert torch.isfinite(model(x)).all()
    q, k = torch.randn(2, 1, HEADS, T, HD).unbind(0)
    state = torch.randn(1, HEADS, T, HD)
    assert not torch.equal(model.encoding.transform_qk(q, k, torch.arange(T), 0, state=state)[0], q)  # before the drop
    model.encoding.on_step(99, 100)  # DroPE after its drop: the base's state no longer transforms q and k
    assert model.encoding.transform_qk(q, k, torch.arange(T), 0, state=state) == (q, k)


def test_conformance_kit_with_other_options():
    assert check_encoding("tape", {"mlp_ratio": 2, "base": 500.0}, speed=False).passed
