"""CARoPE (Veisi et al. 2025, arXiv:2507.23083) from its formula: a per-head, per-token frequency
f_h(x_t) = 1/(1 + softplus(w_h·x_t + b_h)), and pair i of q and k at token m turned by φ_i(m) = Σ_{t<=m} f(x_t)^i
with RoPE's rotation. The references are numbers worked out by hand and explicit 2x2 rotations in float64, never the
cumulative-sum code under test."""

from __future__ import annotations

import math

import pytest
import torch

from pebench import encodings
from pebench.encodings import EncodingContext
from pebench.encodings.base import Wrapper
from pebench.errors import OptionError
from pebench.models.transformer import ModelConfig, Transformer

VOCAB, D, HEADS, LAYERS = 17, 32, 4, 2
CTX = EncodingContext(d_model=D, n_heads=HEADS, n_layers=LAYERS, max_len=128)
SMALL = EncodingContext(d_model=8, n_heads=2, n_layers=2, max_len=16)  # head width 4: pairs 0 and 1


def built(ctx: EncodingContext = CTX, options: dict | None = None) -> encodings.PositionalEncoding:
    torch.manual_seed(0)
    return encodings.build("carope", ctx, options)


def logit_for(f: float) -> float:
    """z with 1/(1 + softplus(z)) = f: softplus(z) = 1/f - 1, z = log(exp(1/f - 1) - 1)."""
    return math.log(math.exp(1.0 / f - 1.0) - 1.0)


def rotated_by_hand(x: torch.Tensor, phases: list[list[float]]) -> torch.Tensor:
    """Pair i of row t of ``x`` ``(T, d)`` turned by ``phases[t][i]`` with the 2x2 rotation matrix, in float64."""
    out = x.double().clone()
    for t, row in enumerate(phases):
        for i, angle in enumerate(row):
            c, s = math.cos(angle), math.sin(angle)
            a, b = float(x[t, 2 * i]), float(x[t, 2 * i + 1])
            out[t, 2 * i], out[t, 2 * i + 1] = c * a - s * b, s * a + c * b
    return out


def test_the_phases_of_a_small_case_by_hand():
    # three tokens whose one-hot hidden states select, per head, the frequencies
    #   head 0: f = 1/2, 1/4, 1/2      head 1: f = 1/3, 1/3, 1/5
    # pair 0 turns by f^0 = 1 a token: phases 1, 2, 3 in both heads; pair 1 by the running sum of f:
    #   head 0: 1/2, 3/4, 5/4          head 1: 1/3, 2/3, 13/15
    pe = built(SMALL)
    freqs = [[0.5, 0.25, 0.5], [1 / 3, 1 / 3, 0.2]]
    with torch.no_grad():
        pe.freq_bias.zero_()
        pe.freq_weight.zero_()
        for h in range(2):
            for t in range(3):
                pe.freq_weight[1, h, t] = logit_for(freqs[h][t])
    x = torch.eye(8)[:3].unsqueeze(0)  # token t's hidden state is the unit vector e_t
    gen = torch.Generator().manual_seed(0)
    q, k = torch.randn(1, 2, 3, 4, generator=gen), torch.randn(1, 2, 3, 4, generator=gen)
    q2, k2 = pe.transform_qk(q, k, torch.arange(3), 1, hidden=x)
    phases = {0: [[1, 0.5], [2, 0.75], [3, 1.25]], 1: [[1, 1 / 3], [2, 2 / 3], [3, 13 / 15]]}
    for h in range(2):
        torch.testing.assert_close(q2[0, h].double(), rotated_by_hand(q[0, h], phases[h]), atol=1e-6, rtol=1e-6)
        torch.testing.assert_close(k2[0, h].double(), rotated_by_hand(k[0, h], phases[h]), atol=1e-6, rtol=1e-6)
    # layer 0's projection is another one: there, every token has the initial frequency
    q0, _ = pe.transform_qk(q, k, torch.arange(3), 0, hidden=x)
    assert not torch.allclose(q0, q2)


def test_a_constant_frequency_gives_ropes_angles():
    # w = 0: every token has the initial frequency f = base^(-2/d), RoPE's θ; φ_i(m) = m·θ^i at tokens m = 1..T,
    # the angle RoPE gives position m (so the scores, which see only differences, are RoPE's)
    pe = built(CTX, {"base": 500.0})
    with torch.no_grad():
        pe.freq_weight.zero_()
    t, dh = 9, D // HEADS
    gen = torch.Generator().manual_seed(1)
    q, k = torch.randn(2, HEADS, t, dh, generator=gen), torch.randn(2, HEADS, t, dh, generator=gen)
    x = torch.randn(2, t, D, generator=gen)
    q2, k2 = pe.transform_qk(q, k, torch.arange(t), 0, hidden=x)
    theta = 500.0 ** (-2 / dh)
    phases = [[m * theta**i for i in range(dh // 2)] for m in range(1, t + 1)]
    for b in range(2):
        for h in range(HEADS):
            torch.testing.assert_close(q2[b, h].double(), rotated_by_hand(q[b, h], phases), atol=2e-5, rtol=1e-5)
            torch.testing.assert_close(k2[b, h].double(), rotated_by_hand(k[b, h], phases), atol=2e-5, rtol=1e-5)
    rope = encodings.build("rope", CTX, {"base": 500.0})
    rq, rk = rope.transform_qk(q, k, torch.arange(1, t + 1), 0)
    torch.testing.assert_close(q2, rq, atol=2e-5, rtol=1e-5)
    torch.testing.assert_close(k2, rk, atol=2e-5, rtol=1e-5)


def test_the_score_of_m_and_n_depends_only_on_the_tokens_between_them():
    # φ(m) - φ(n) = Σ_{t=n+1}^{m} f(x_t)^i: changing the hidden states of tokens up to n leaves q_m·k_n unchanged,
    # changing one between n and m changes it
    pe = built()
    with torch.no_grad():
        pe.freq_weight.mul_(50)  # frequencies that really differ between tokens
    t, n, m = 12, 4, 9
    gen = torch.Generator().manual_seed(2)
    q, k = torch.randn(1, HEADS, t, D // HEADS, generator=gen), torch.randn(1, HEADS, t, D // HEADS, generator=gen)
    x = torch.randn(1, t, D, generator=gen)

    def score(hidden: torch.Tensor) -> torch.Tensor:
        q2, k2 = pe.transform_qk(q, k, torch.arange(t), 0, hidden=hidden)
        return (q2[..., m, :] * k2[..., n, :]).sum(-1).detach()

    before = x.clone()
    before[:, : n + 1] = torch.randn(1, n + 1, D, generator=gen)
    torch.testing.assert_close(score(before), score(x), atol=1e-5, rtol=1e-5)
    between = x.clone()
    between[:, n + 2] = torch.randn(D, generator=gen)
    assert (score(between) - score(x)).abs().max() > 1e-3


def test_initialisation_starts_at_ropes_frequency_and_bad_options_are_one_line():
    pe = built()
    f = 1 / (1 + torch.nn.functional.softplus(pe.freq_bias.detach()))
    torch.testing.assert_close(f, torch.full_like(f, 10000 ** (-2 / 8)))  # head width 8: θ = 10000^(-1/4) = 0.1
    assert 0.01 < float(pe.freq_weight.detach().std()) < 0.03
    assert sum(p.numel() for p in pe.parameters()) == LAYERS * HEADS * (D + 1)
    with pytest.raises(OptionError, match=r"^encoding carope: option base=1.0 is out of range; valid: float in "
                                          r"\(1, inf\)$"):  # fmt: skip
        built(CTX, {"base": 1.0})


def test_the_model_transforms_q_and_k_in_every_layer_on_every_path_and_ignores_positions():
    torch.manual_seed(0)
    model = Transformer(ModelConfig(vocab_size=VOCAB, d_model=D, n_layers=LAYERS, n_heads=HEADS),
                        encodings.build("carope", CTX))
    tokens = torch.randint(0, VOCAB, (2, 10), generator=torch.Generator().manual_seed(3))
    asked = []
    original = model.encoding.log_frequencies

    def spy(x: torch.Tensor, layer: int) -> torch.Tensor:
        asked.append(layer)
        return original(x, layer)

    model.encoding.log_frequencies = spy  # type: ignore[method-assign]
    model.train()
    trained = model(tokens)  # the training route (gradients on)
    with torch.no_grad():
        model.eval()
        evaluated = model(tokens)  # the evaluation route (SDPA)
        torch.testing.assert_close(evaluated, trained.detach(), atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(model(tokens, torch.arange(10) + 31), evaluated)
        assert asked == [0, 1] * 3
        model.encoding.freq_weight.mul_(100)  # other frequencies: the output changes
        assert not torch.allclose(model(tokens), evaluated, atol=1e-4)
    maps = model.attention_maps(tokens, layer=1)
    torch.testing.assert_close(maps.sum(-1), torch.ones(2, HEADS, 10))


def test_a_wrapper_forwards_the_roles_with_their_keywords():
    class Passthrough(Wrapper):
        name = "passthrough_carope_test"

        def __init__(self, ctx: EncodingContext, inner: encodings.PositionalEncoding) -> None:
            super().__init__(ctx)
            self.inner = inner

    carope, path = built(), encodings.build("path", CTX)
    wrapped, wrapped_path = Passthrough(CTX, carope), Passthrough(CTX, path)
    assert wrapped.qk_from_hidden and wrapped.attention_kernel == "fused" and not Passthrough.qk_from_hidden
    assert wrapped_path.attention_kernel == "path" and not wrapped_path.qk_from_hidden  # its scores: its kernel's
    q, k, x = torch.randn(2, HEADS, 5, D // HEADS), torch.randn(2, HEADS, 5, D // HEADS), torch.randn(2, 5, D)
    for got, want in zip(wrapped.transform_qk(q, k, torch.arange(5), 1, hidden=x),
                         carope.transform_qk(q, k, torch.arange(5), 1, hidden=x), strict=True):  # fmt: skip
        torch.testing.assert_close(got, want)
    assert not torch.allclose(carope.transform_qk(q, k, torch.arange(5), 1, hidden=x)[0], q)
