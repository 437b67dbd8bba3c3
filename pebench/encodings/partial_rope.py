"""RoPE on part of each head: two ways of leaving some of q's and k's dimensions unrotated.

**p-RoPE** (``p_rope``; Barbero et al., "Round and Round We Go! What makes Rotary Positional Encodings useful?",
ICLR 2025, arXiv:2410.06205, §6 and their ``apply_p_rope``). RoPE's frequencies θ_i = base^(-2i/d), i = 0 .. d/2 - 1,
run from the highest (i = 0) to the lowest. p-RoPE keeps the highest fraction p of them and sets the rest to zero:

    n_rot = int(p · d // 2)                         (the authors' rope_angles)
    θ^p_i = base^(-2i/d)   for i < n_rot             (exactly RoPE's frequency of that pair)
    θ^p_i = 0              for i >= n_rot            (infinite wavelength: the pair is never rotated)

so the lowest-frequency pairs, which Barbero et al. find Gemma uses as position-independent "semantic channels",
carry no position at all. p = 1 is RoPE and p = 0 is NoPE. The default p = 0.75 is the setting with the lowest
validation perplexity in the paper's Gemma 2B runs (Table 2: 0.75-RoPE against RoPE, 0.25-RoPE and NoPE on Wiki
and FlanV2).

**Partial rotary** (``partial_rope``; GPT-J and GPT-NeoX's ``rotary_pct``, Black et al. 2022, "GPT-NeoX-20B",
arXiv:2204.06745; Hugging Face's ``partial_rotary_factor``). Only the first r dimensions of each head are rotated,
with RoPE's frequencies computed *for that width*, and the other d - r dimensions pass through:

    r = int(d · fraction), rounded down to an even number (GPT-NeoX: rotary_ndims = int(head_size · rotary_pct))
    θ_i = base^(-2i/r),   i = 0 .. r/2 - 1          (GPT-NeoX: inv_freq over rotary_ndims)
    q'[:r] = R(m θ) q[:r],   q'[r:] = q[r:]          (likewise k)

The default fraction 0.25 is GPT-NeoX-20B's and GPT-J's (64 of 256 dimensions). The two differ in the frequencies
the rotated part gets: p-RoPE's are a subset of full RoPE's (from 1 down to base^(-2(n_rot-1)/d)); partial rotary
spans 1 .. base^(-(r-2)/r), the whole RoPE range squeezed into r dimensions. Pairs are adjacent dimensions
(2i, 2i+1) as in :mod:`pebench.encodings.rope`; GPT-NeoX pairs dimension i with i + r/2 ("rotate half"), a fixed
permutation of the learned projections' outputs that does not change what a model can learn.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from pebench.encodings.base import EncodingContext
from pebench.encodings.registry import register
from pebench.encodings.rope import RoPE, rope_inv_freq, rotate_pairs
from pebench.errors import OptionError
from pebench.options import Option


def p_rope_pairs(head_dim: int, p: float) -> int:
    """How many pairs p-RoPE rotates: the authors' ``int(rope_percentage * head_dim // 2)``."""
    return int(p * head_dim // 2)


def p_rope_inv_freq(dim: int, base: float, p: float) -> Tensor:
    """θ^p_i: RoPE's θ_i for the ``p_rope_pairs`` highest frequencies, 0 for the others (float32)."""
    theta = rope_inv_freq(dim, base)
    theta[p_rope_pairs(dim, p) :] = 0.0
    return theta


def rotary_width(head_dim: int, fraction: float) -> int:
    """GPT-NeoX's rotary_ndims ``int(head_dim * fraction)``, rounded down to an even number of dimensions."""
    width = int(head_dim * fraction)
    return width - width % 2


@register
class PRoPE(RoPE):
    name = "p_rope"
    description = "RoPE on the highest fraction p of frequencies only (0.75); the lowest pairs are never rotated"
    paper = "Barbero et al. 2025 (ICLR), arXiv:2410.06205"
    options = {
        **RoPE.options,
        "p": Option(0.75, "fraction of frequency pairs rotated (the highest ones); 1 = RoPE, 0 = NoPE",
                    low=0.0, high=1.0),
    }  # fmt: skip

    def inv_freq(self) -> Tensor:
        return p_rope_inv_freq(self.ctx.head_dim, self.opts["base"], self.opts["p"])

    def extra_config(self) -> dict[str, Any]:
        return {"rotated_pairs": p_rope_pairs(self.ctx.head_dim, self.opts["p"])}


@register
class PartialRoPE(RoPE):
    name = "partial_rope"
    description = "RoPE on the first fraction (0.25) of each head's dimensions with frequencies for that width"
    paper = "GPT-NeoX rotary_pct: Black et al. 2022, arXiv:2204.06745; Su et al. 2021, arXiv:2104.09864"
    options = {
        **RoPE.options,
        "fraction": Option(0.25, "fraction of each head's dimensions rotated (GPT-NeoX's rotary_pct)",
                           low=0.0, high=1.0, low_open=True),
    }  # fmt: skip

    def __init__(self, ctx: EncodingContext, **options: Any) -> None:
        self.width = 0
        super().__init__(ctx, **options)
        self.width = rotary_width(ctx.head_dim, self.opts["fraction"])
        if self.width < 2:
            need = 2 / ctx.head_dim
            raise OptionError(f"encoding {self.name}: option fraction={self.opts['fraction']!r} rotates no pair of a "
                              f"{ctx.head_dim}-dimensional head; valid: float in [{need:g}, 1]")
        self._inv_freq = self.inv_freq().to(self._inv_freq.device)

    def inv_freq(self) -> Tensor:
        """θ_i = base^(-2i/r) over the rotated width r (RoPE's own before ``width`` is known)."""
        return rope_inv_freq(self.width or self.ctx.head_dim, self.opts["base"])

    def transform_qk(self, q: Tensor, k: Tensor, positions: Tensor, layer: int) -> tuple[Tensor, Tensor]:
        ang = self.angles(positions, layer)
        cos, sin = torch.cos(ang), torch.sin(ang)
        r = self.width
        q = torch.cat([rotate_pairs(q[..., :r], cos, sin), q[..., r:]], dim=-1)
        k = torch.cat([rotate_pairs(k[..., :r], cos, sin), k[..., r:]], dim=-1)
        return q, k

    def extra_config(self) -> dict[str, Any]:
        return {"rotated_dims": self.width}
