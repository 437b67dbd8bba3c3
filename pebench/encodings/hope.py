"""HoPE, high-frequency rotary position encoding (Chen, Lv, Luan, Wang and Liu, "HoPE: A Novel Positional Encoding
Without Long-Term Decay for Enhanced Context Awareness and Extrapolation", ACL 2025, arXiv:2410.21216).

RoPE (:mod:`pebench.encodings.rope`) turns pair i = (x_{2i}, x_{2i+1}) of q and k at position m by m·θ_i,
θ_i = base^(-2i/d). Pair i completes a full turn within the training length L only when its wavelength 2π/θ_i is at
most L. Chen et al. find that some learned frequency components of RoPE (their "activated" components) shape a
U-shaped attention and limit extrapolation, and that the lowest-frequency components settle into constant patterns
(abstract and analysis). HoPE "replaces the specific components in RoPE with position-independent ones, retaining only
high-frequency signals" (abstract):

    θ^H_i = θ_i    if θ_i ≥ 2π / L   (wavelength ≤ L: at least one full turn in training; rotated as in RoPE)
    θ^H_i = 0      if θ_i < 2π / L   (wavelength > L: never rotated, the pair passes unchanged)

so q_m·k_n = Σ_{kept i} Re[q̂_i conj(k̂_i) e^{i(m-n)θ_i}] + Σ_{other i} (q_{2i} k_{2i} + q_{2i+1} k_{2i+1}): still a
function of m - n only (shift-invariant), but the position-independent pairs give every distance the same score, and
the kept pairs are periodic with periods at most L, so no term decays with distance (the paper's "without long-term
decay"). As p-RoPE (:mod:`pebench.encodings.partial_rope`), the kept frequencies are exactly RoPE's; unlike p-RoPE
the cut is not a fixed fraction but follows the training length.

Defaults and sources: base 10000 (RoPE's default). L is the task's training length
(:attr:`pebench.encodings.base.EncodingContext.train_length`; the model's maximum length when it is unknown), fixed
when the encoding is built: evaluation at longer lengths keeps the training-time cut, nothing is rescaled. The
criterion θ_i ≥ 2π/L and "the removed components are left unrotated" are as Levy, Videau et al. ("RoPE is dead, long
live RoPE: towards scalable data-aware positional encodings", §2.1 Eq. 2 and §2.2) restate HoPE: "retains RoPE on the
fast bands and sets the slow-band rotation to zero". Not verified here: HoPE's own equation (its method section could
not be read from this machine), so neither whether a band exactly at 2π/L is kept (here it is) nor whether HoPE
removes any component beyond the slow ones (the "activated" components it names). pebench keeps every band with
θ_i ≥ 2π/L, the highest frequencies included: nothing at the top is dropped.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor

from pebench.encodings.base import EncodingContext
from pebench.encodings.registry import register
from pebench.encodings.rope import RoPE


def hope_kept(dim: int, base: float, length: int) -> Tensor:
    """Which pairs HoPE rotates: θ_i·L ≥ 2π (a bool per pair, i = 0 .. dim/2 - 1, highest frequency first)."""
    theta = base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    return theta * length >= 2 * math.pi


def hope_inv_freq(dim: int, base: float, length: int) -> Tensor:
    """θ^H_i: RoPE's θ_i for the pairs whose wavelength is at most ``length``, 0 for the others (float32)."""
    theta = base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    return torch.where(hope_kept(dim, base, length), theta, 0.0).to(torch.float32)


@register
class HoPE(RoPE):
    name = "hope"
    description = "RoPE on the pairs with wavelength ≤ the training length only; the slower pairs are never rotated"
    paper = "Chen et al. 2025 (ACL), arXiv:2410.21216"

    def __init__(self, ctx: EncodingContext, **options: Any) -> None:
        self.length = ctx.train_length or ctx.max_len
        super().__init__(ctx, **options)

    def inv_freq(self) -> Tensor:
        return hope_inv_freq(self.ctx.head_dim, self.opts["base"], self.length)

    def extra_config(self) -> dict[str, Any]:
        return {"rotated_pairs": int(hope_kept(self.ctx.head_dim, self.opts["base"], self.length).sum())}
