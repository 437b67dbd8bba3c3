"""Selective attention (Leviathan et al. 2025, arXiv:2410.02703, §3 and Figure 2), from its formula: with z the
scaled logits of head 0, every head's logits lose F_ij = Σ_{j<k<i} ReLU(z_kj) (column 0, the <BOS> token, never
masked). The expected masks are worked out by hand from a logit matrix chosen for the test, never from pebench's
output."""

from __future__ import annotations

import math

import torch

from pebench import encodings
from pebench.encodings import EncodingContext
from pebench.models.transformer import ModelConfig, Transformer
from pebench.testing import check_encoding

HEAD_DIM, HEADS = 5, 2
CTX = EncodingContext(d_model=HEAD_DIM * HEADS, n_heads=HEADS, n_layers=2, max_len=64)

# Head 0's scaled logits z (query rows, key columns); the entries above the diagonal are the future and must be
# ignored, so they are large.
Z = [
    [2.0, 9.0, 9.0, 9.0, 9.0],
    [1.5, 0.7, 9.0, 9.0, 9.0],
    [3.0, 1.2, -0.4, 9.0, 9.0],
    [-1.0, 0.5, 2.5, 0.3, 9.0],
    [4.0, -2.0, 0.8, 1.1, 5.0],
]
# F_ij = Σ_{j<k<i} ReLU(z_kj), j >= 1, by hand:
#   F_31 = ReLU(z_21) = 1.2;  F_41 = ReLU(z_21) + ReLU(z_31) = 1.2 + 0.5 = 1.7;  F_42 = ReLU(z_32) = 2.5;
#   F_21 = F_32 = F_43 = 0 (no k strictly between);  column 0 (z_20 = 3, z_40 = 4) and the diagonal: 0;
#   z_41 = -2 and z_43 = 1.1 are row 4's own selections: they act only on later rows.
F_BY_HAND = [
    [0.0, 0.0, 0.0, 0.0, 0.0],
    [0.0, 0.0, 0.0, 0.0, 0.0],
    [0.0, 0.0, 0.0, 0.0, 0.0],
    [0.0, 1.2, 0.0, 0.0, 0.0],
    [0.0, 1.7, 2.5, 0.0, 0.0],
]


def qk_with_head0_logits(z: list[list[float]], seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """q, k ``(1, HEADS, T, HEAD_DIM)`` whose head-0 scaled logits q_i·k_j/sqrt(d) are ``z`` (k_j = sqrt(d)·e_j,
    q_i = row i of z); head 1 is random."""
    t = len(z)
    gen = torch.Generator().manual_seed(seed)
    q, k = torch.randn(1, HEADS, t, HEAD_DIM, generator=gen), torch.randn(1, HEADS, t, HEAD_DIM, generator=gen)
    q[0, 0] = torch.tensor(z)
    k[0, 0] = torch.eye(t) * math.sqrt(HEAD_DIM)
    return q, k


def bias_of(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    return encodings.build("selective", CTX).attn_bias(q, k, torch.arange(q.shape[2]), layer=0)


def test_the_mask_of_a_hand_made_logit_matrix():
    q, k = qk_with_head0_logits(Z)
    bias = bias_of(q, k)
    assert bias.shape == (1, 1, 5, 5)  # one F for every head
    torch.testing.assert_close(-bias[0, 0], torch.tensor(F_BY_HAND), atol=1e-5, rtol=0)


def test_head_1_does_not_select_and_every_head_gets_the_mask():
    q, k = qk_with_head0_logits(Z, seed=0)
    q2, k2 = qk_with_head0_logits(Z, seed=1)  # another head 1, the same head 0
    torch.testing.assert_close(bias_of(q, k), bias_of(q2, k2))
    model_bias = bias_of(q, k).expand(1, HEADS, 5, 5)
    torch.testing.assert_close(model_bias[0, 1], model_bias[0, 0])


def test_negative_logits_select_nothing():
    z = [[-0.5 if j <= i else 9.0 for j in range(5)] for i in range(5)]  # ReLU(-0.5) = 0 everywhere
    q, k = qk_with_head0_logits(z)
    assert torch.equal(bias_of(q, k), torch.zeros(1, 1, 5, 5))


def test_a_token_no_later_token_selects_keeps_its_plain_softmax_weight():
    q, k = qk_with_head0_logits(Z)
    bias = bias_of(q, k)[0, 0]
    z = torch.tensor(Z)
    causal = torch.ones(5, 5, dtype=torch.bool).tril()
    plain = z.masked_fill(~causal, float("-inf")).softmax(-1)
    selective = (z + bias).masked_fill(~causal, float("-inf")).softmax(-1)
    # rows 0-2: nothing selected, the plain softmax
    torch.testing.assert_close(selective[:3], plain[:3])
    # row 3, logits (-1, 0.5, 2.5, 0.3): plain softmax (0.023659, 0.106034, 0.783493, 0.086813); key 1 loses 1.2,
    # logits (-1, -0.7, 2.5, 0.3): (0.025553, 0.034493, 0.846194, 0.093761)
    torch.testing.assert_close(plain[3, :4], torch.tensor([0.023659, 0.106034, 0.783493, 0.086813]), atol=1e-6,
                               rtol=0)  # fmt: skip
    torch.testing.assert_close(selective[3, :4], torch.tensor([0.025553, 0.034493, 0.846194, 0.093761]), atol=1e-6,
                               rtol=0)  # fmt: skip
    # the unselected keys 0, 2, 3 keep their logits: their weights keep the plain ratios (e^(z_3j - z_3j'))
    for a, b in ((0, 2), (2, 3), (0, 3)):
        assert math.isclose(float(selective[3, a] / selective[3, b]), math.exp(Z[3][a] - Z[3][b]), rel_tol=1e-5)
    # row 4, logits (4, -2, 0.8, 1.1, 5) minus (0, 1.7, 2.5, 0, 0): keys 0, 3, 4 from (0.262017, 0.014417, 0.712236)
    # to (0.264753, 0.014568, 0.719674)
    torch.testing.assert_close(selective[4, [0, 3, 4]], torch.tensor([0.264753, 0.014568, 0.719674]), atol=1e-6,
                               rtol=0)  # fmt: skip


def test_the_mask_is_causal_and_acts_strictly_after_the_selecting_token():
    gen = torch.Generator().manual_seed(3)
    q, k = torch.randn(2, HEADS, 8, HEAD_DIM, generator=gen) * 3, torch.randn(2, HEADS, 8, HEAD_DIM, generator=gen) * 3
    base = bias_of(q, k)
    q2, k2 = q.clone(), k.clone()
    q2[:, :, 4:] += 5 * torch.randn(2, HEADS, 4, HEAD_DIM, generator=gen)  # change tokens 4..7 only
    k2[:, :, 4:] += 5 * torch.randn(2, HEADS, 4, HEAD_DIM, generator=gen)
    changed = bias_of(q2, k2)
    # row i uses the selections of tokens k < i on keys j < k: rows 0..4 do not see token 4's query or later keys
    torch.testing.assert_close(changed[..., :5, :], base[..., :5, :], atol=0, rtol=0)
    assert (changed[..., 5:, :] - base[..., 5:, :]).abs().max() > 1e-3
    assert (base.triu(0) == 0).all()  # nothing on or above the diagonal, and F >= 0
    assert (base <= 0).all() and (base[..., 0] == 0).all()


def test_the_selection_logits_are_not_detached():
    q, k = qk_with_head0_logits(Z)
    q.requires_grad_(True)
    k.requires_grad_(True)
    bias_of(q, k).sum().backward()
    assert q.grad[0, 0].abs().sum() > 0 and k.grad[0, 0].abs().sum() > 0  # head 0 learns through F
    assert (q.grad[0, 1] == 0).all() and (k.grad[0, 1] == 0).all()  # head 1 does not select


def test_the_model_changes_only_the_rows_after_a_selection():
    torch.manual_seed(0)
    cfg = ModelConfig(vocab_size=17, d_model=32, n_layers=2, n_heads=4)
    selective = Transformer(cfg, encodings.build("selective", EncodingContext(32, 4, 2, 64))).eval()
    torch.manual_seed(0)
    nope = Transformer(cfg, encodings.build("nope", EncodingContext(32, 4, 2, 64))).eval()
    with torch.no_grad():  # the same weights: selective attention adds no parameter
        for p in selective.parameters():
            p.mul_(8)  # larger logits, so head 0 selects
        for p in nope.parameters():
            p.mul_(8)
    tokens = torch.randint(0, 17, (2, 12), generator=torch.Generator().manual_seed(2))
    ours, plain = selective.attention_maps(tokens, layer=0), nope.attention_maps(tokens, layer=0)
    torch.testing.assert_close(ours[..., :3, :], plain[..., :3, :])  # F is 0 on rows 0..2
    assert (ours[..., 3:, :] - plain[..., 3:, :]).abs().max() > 1e-3
    torch.testing.assert_close(ours.sum(-1), torch.ones(2, 4, 12))
    assert sum(p.numel() for p in selective.encoding.parameters()) == 0


def test_selective_conforms():
    report = check_encoding("selective", speed=False)
    assert report.passed, "\n".join(report.lines())
