"""FoPE, Fourier position embedding (Hua, Jiang, Lv, Zhang, Sun, Fan, Zhu, Qi, Ding and Zhou, "Fourier Position
Embedding: Enhancing Attention's Periodic Extension for Length Generalization", ICML 2025, arXiv:2412.17739).

Hua et al. read RoPE as a non-uniform discrete Fourier transform: pair m of q and k is multiplied by e^{iω_m n} at
position n (ω_m = θ_m = base^(-2m/d)), one frequency per pair. Linear layers and activations mix frequencies into every
dimension (spectral leakage), and frequencies whose period is longer than the training length L never see a full
period in training. FoPE answers both (its method section): each pair becomes a Fourier series of the head's
frequencies, and the under-trained frequencies are clipped to zero frequency (a constant, position-independent
component):

    f_m(n) = e^{iω_m n} + Σ_{ω ≠ ω_m} a_ω e^{iωn}    if ω_m ≥ ω_l
    f_m(n) = 1                                        if ω_m < ω_l,        ω_l = 2π / L   (the floor frequency)

with the sum over the head's unclipped frequencies Ω = {ω_j ≥ ω_l} (D of them); this case formula is the paper's as a
public reading note of it quotes (its section and equation numbers are not verified here). pebench follows the
authors' released code (OLMo-based ``FourierEmbedding``, read from a public copy of their repository) for the real
form and the defaults: the cosine and the sine of each pair get their own coefficients, per layer and per head,

    c_m(n) = Σ_{j<D} C_{jm} cos(ω_j n),   s_m(n) = Σ_{j<D} S_{jm} sin(ω_j n),
    (x'_{2m}, x'_{2m+1}) = (x_{2m} c_m - x_{2m+1} s_m,  x_{2m} s_m + x_{2m+1} c_m)     (m < D; the same for q and k)

and the clipped pairs (m ≥ D, the lowest frequencies) pass unchanged. C and S start at the identity plus Gaussian
noise, C, S = I + ε with ε drawn as ``torch.nn.init.xavier_normal_`` on the (heads, D, D) tensor of a layer with gain σ
(standard deviation σ·√(2 / (D² + H·D))), and are **fixed**, not trained (the code's ``fourier_learnable`` is False
and no released configuration turns it on; option ``learnable`` trains them). σ = 0.3 is the gain of the smallest
released configuration (60M parameters; 0.4 at 180M, 0.6 at 1.2B); the floor ratio is 1 (ω_l = 2π/L exactly, L the
training length). So pair m's own frequency has weight 1 and each of the D - 1 other unclipped frequencies a small
random one; σ = 0 is RoPE with the clipped pairs unrotated.

What q·k keeps: pair m contributes Re[q̂_m conj(k̂_m) z_m(t_q) conj(z_m(t_k))] with z_m = c_m + i·s_m, and the product
z_m(t_q) conj(z_m(t_k)) holds cross terms cos(ω_j t_q)·cos(ω_l t_k), j ≠ l, that depend on the two positions and not
only on t_q - t_k. FoPE is therefore **not shift-invariant** (the paper's complex form, one a_ω per frequency, has the
same cross terms); it is exactly when C = S = I (σ = 0). It is a rotary-family encoding that declares
``shift_invariant = False``, as FIRE does.

Where pebench departs from the released code: (1) the code pads the clipped pairs' sine with 1 as well as their cosine
(a fixed 45° turn scaled by √2, which doubles those pairs' contribution to q·k at every distance); pebench uses the
paper's f = 1 (cosine 1, sine 0). (2) The code caps the Fourier pairs at head_dim/4 (the dominant frequencies subsampled
when D is larger; a ``TODO`` in the code); pebench gives every unclipped pair its series, which is the same whenever
D ≤ head_dim/4 (the released 512-token runs: D = 16 = 64/4). (3) Pairs are adjacent dimensions (2m, 2m+1), as in
:mod:`pebench.encodings.rope`, where the code pairs m with m + d/2: a fixed permutation of the projections. Not
verified here: the paper's own wording of the initialisation and of whether the coefficients are learned (its full
text could not be read from this machine); the choices above are the released code's.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor, nn

from pebench.encodings.base import EncodingContext, PositionalEncoding
from pebench.encodings.registry import register
from pebench.encodings.rope import positions_for_heads, rope_inv_freq, rotate_pairs
from pebench.options import Option


def fope_pairs(dim: int, base: float, length: int) -> int:
    """D: how many of RoPE's frequencies θ_i = base^(-2i/dim) reach the floor 2π/``length`` (the unclipped ones, the
    highest first); the other dim/2 - D are clipped to zero frequency."""
    theta = base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    return int((theta * length >= 2 * math.pi).sum())


@register
class FoPE(PositionalEncoding):
    name = "fope"
    family = "rotary"
    description = "each pair a Fourier series of the head's frequencies; those of period > training length set to 0"
    paper = "Hua et al. 2025 (ICML), arXiv:2412.17739"
    shift_invariant = False  # cross terms between frequencies depend on absolute positions (pebench.testing)
    options = {
        "base": Option(10000.0, "frequency base", low=1.0, low_open=True),
        "sigma": Option(0.3, "gain σ of the coefficients' xavier-normal noise around the identity (0: RoPE, clipped)",
                        low=0.0),
        "learnable": Option(False, "train the Fourier coefficients (the authors' code: fixed)", type=bool),
    }  # fmt: skip

    def __init__(self, ctx: EncodingContext, **options: Any) -> None:
        super().__init__(ctx, **options)
        if ctx.head_dim % 2:
            raise ValueError(f"{self.name}: head_dim must be even, got {ctx.head_dim}")
        self.length = ctx.train_length or ctx.max_len
        d = fope_pairs(ctx.head_dim, self.opts["base"], self.length)
        self.pairs = d
        self.register_buffer("_freq", rope_inv_freq(ctx.head_dim, self.opts["base"])[:d].clone(), persistent=False)
        coef = {}
        for part in ("cos", "sin"):
            table = torch.zeros(ctx.n_layers, ctx.n_heads, d, d)
            for layer in range(ctx.n_layers):
                if d:
                    nn.init.xavier_normal_(table[layer], gain=self.opts["sigma"])
            coef[part] = table + torch.eye(d)
        if self.opts["learnable"]:
            self.cos_coef = nn.Parameter(coef["cos"])
            self.sin_coef = nn.Parameter(coef["sin"])
        else:
            self.register_buffer("cos_coef", coef["cos"])
            self.register_buffer("sin_coef", coef["sin"])

    def series(self, positions: Tensor, layer: int) -> tuple[Tensor, Tensor]:
        """c_m(n) and s_m(n) of the D unclipped pairs for every head: ``(H, T, D)`` or ``(B, H, T, D)``."""
        ang = positions_for_heads(positions.to(self._freq.device)) * self._freq  # (T, D) or (B, 1, T, D)
        return torch.cos(ang) @ self.cos_coef[layer], torch.sin(ang) @ self.sin_coef[layer]

    def transform_qk(self, q: Tensor, k: Tensor, positions: Tensor, layer: int) -> tuple[Tensor, Tensor]:
        d = self.pairs
        if d == 0:
            return q, k
        cos, sin = self.series(positions, layer)
        r = 2 * d
        q = torch.cat([rotate_pairs(q[..., :r], cos, sin), q[..., r:]], dim=-1)
        k = torch.cat([rotate_pairs(k[..., :r], cos, sin), k[..., r:]], dim=-1)
        return q, k

    def extra_config(self) -> dict[str, Any]:
        return {"fourier_pairs": self.pairs}
