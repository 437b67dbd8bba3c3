"""RoPE variants for length extrapolation: position interpolation (``pi``), dynamic NTK-aware base scaling
(``ntk``) and YaRN (``yarn``). Each rescales RoPE's frequencies θ_i = base^(-2i/d) by a factor s.

Two modes (option ``mode``):

* ``eval`` (default): train exactly as RoPE (s = 1); before evaluating at length L a model trained at length
  L_train, set s = max(1, L / L_train) and the original context to L_train (then restore s = 1). This applies the
  method at inference time to a RoPE model trained at the task's training length.
* ``train``: use the fixed ``factor`` option as s during training and evaluation (trained from scratch with the
  scaling on). YaRN's original context is then the task's training length.

Formulas (d = head_dim), matching Hugging Face ``transformers`` ``modeling_rope_utils``:

* ``pi`` (Chen et al. 2023, arXiv:2306.15595): positions divided by s, i.e. θ'_i = θ_i / s.
* ``ntk`` (bloc97's NTK-aware scaling, 2023; dynamic form as in ``_compute_dynamic_ntk_parameters``):
  base' = base · (α·s - (α - 1))^(d/(d-2)), θ'_i = base'^(-2i/d), α the ``alpha`` option (1 by default, which
  gives base' = base · s^(d/(d-2)) and so divides the lowest frequency by exactly s).
* ``yarn`` (Peng et al. 2023, arXiv:2309.00071, "NTK-by-parts" + attention temperature; as in
  ``_compute_yarn_parameters``): with L_orig the original context, β_fast = 32, β_slow = 1,

      dim(r)   = d · ln(L_orig / (2π r)) / (2 ln base)          (find_correction_dim)
      low      = max(floor(dim(β_fast)), 0),  high = min(ceil(dim(β_slow)), d - 1)
      ramp_i   = clamp((i - low) / (high - low), 0, 1),  i = 0 .. d/2 - 1   (high += 0.001 when equal)
      γ_i      = 1 - ramp_i                                     (1: keep, 0: interpolate)
      θ'_i     = θ_i / s · (1 - γ_i) + θ_i · γ_i
      mscale   = 0.1 · ln(s) + 1  (1 when s <= 1), multiplied into cos and sin,

  so q·k is scaled by mscale².
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor

from pebench.encodings.base import EncodingContext
from pebench.encodings.registry import register
from pebench.encodings.rope import RoPE, rope_inv_freq, rotate_pairs
from pebench.options import Option

MODES = ("eval", "train")


class ScaledRoPE(RoPE):
    """RoPE whose frequencies depend on a scale factor s, set by the mode (see the module docstring)."""

    options = {
        **RoPE.options,
        "mode": Option("eval", "eval: RoPE in training, s = eval/train length at evaluation; train: s = factor",
                       type=str, choices=MODES),
        "factor": Option(4.0, "scale factor s used in train mode", low=1.0),
    }

    def __init__(self, ctx: EncodingContext, **options: Any) -> None:
        super().__init__(ctx, **options)
        self.scale = self.opts["factor"] if self.opts["mode"] == "train" else 1.0
        self.original_length = ctx.train_length or ctx.max_len
        self.refresh()

    def current_scale(self) -> float:
        return getattr(self, "scale", 1.0)

    def refresh(self) -> None:
        """Recompute the frequencies after the scale changed."""
        self._inv_freq = self.inv_freq().to(self._inv_freq.device)

    def configure_eval(self, train_length: int, eval_length: int) -> None:
        if self.opts["mode"] == "eval":
            self.scale = max(1.0, eval_length / train_length)
            self.original_length = train_length
            self.refresh()

    def extra_config(self) -> dict[str, Any]:
        if self.opts["mode"] == "eval":
            return {"scale_rule": "s = max(1, eval_length / train_length) at evaluation, 1 in training"}
        return {"scale_rule": "s = factor in training and evaluation"}


@register
class PositionInterpolation(ScaledRoPE):
    name = "pi"
    family = "rotary"
    description = "RoPE with linear position interpolation (positions / s)"
    paper = "Chen et al. 2023, arXiv:2306.15595"

    def inv_freq(self) -> Tensor:
        return rope_inv_freq(self.ctx.head_dim, self.opts["base"]) / self.current_scale()


@register
class DynamicNTK(ScaledRoPE):
    name = "ntk"
    family = "rotary"
    description = "RoPE with dynamic NTK-aware base scaling base·(α·s-α+1)^(d/(d-2))"
    paper = "bloc97 2023 (NTK-aware scaling); Peng et al. 2023, arXiv:2309.00071 §3.1"
    options = {**ScaledRoPE.options, "alpha": Option(1.0, "α of the dynamic NTK formula (HF's factor)", low=1.0)}

    def inv_freq(self) -> Tensor:
        d, s, alpha = self.ctx.head_dim, self.current_scale(), self.opts["alpha"]
        base = self.opts["base"] * (alpha * s - (alpha - 1.0)) ** (d / (d - 2)) if d > 2 else self.opts["base"]
        return rope_inv_freq(d, base)


def yarn_correction_dim(rotations: float, dim: int, base: float, original_length: int) -> float:
    """The dimension index whose wavelength fits ``rotations`` full turns in ``original_length`` (Peng et al. §3.2)."""
    return dim * math.log(original_length / (rotations * 2 * math.pi)) / (2 * math.log(base))


def yarn_correction_range(dim: int, base: float, original_length: int,
                          beta_fast: float = 32.0, beta_slow: float = 1.0) -> tuple[int, int]:
    """(low, high) indices of the ramp: floor/ceil of the correction dims, clipped to [0, dim - 1]."""
    low = math.floor(yarn_correction_dim(beta_fast, dim, base, original_length))
    high = math.ceil(yarn_correction_dim(beta_slow, dim, base, original_length))
    return max(low, 0), min(high, dim - 1)


def yarn_inv_freq(dim: int, base: float, scale: float, original_length: int) -> Tensor:
    """YaRN's frequencies θ'_i for head width ``dim`` (float32)."""
    theta = rope_inv_freq(dim, base).to(torch.float64)
    low, high = yarn_correction_range(dim, base, original_length)
    hi = high + 0.001 if low == high else high
    ramp = ((torch.arange(dim // 2, dtype=torch.float64) - low) / (hi - low)).clamp(0.0, 1.0)
    keep = 1.0 - ramp
    return (theta / scale * (1.0 - keep) + theta * keep).to(torch.float32)


def yarn_mscale(scale: float) -> float:
    """YaRN's attention factor 0.1·ln(s) + 1 (1 for s <= 1), applied to cos and sin."""
    return 1.0 if scale <= 1.0 else 0.1 * math.log(scale) + 1.0


@register
class YaRN(ScaledRoPE):
    name = "yarn"
    family = "rotary"
    description = "RoPE with YaRN frequency ramp (NTK-by-parts) and 0.1·ln(s)+1 attention factor"
    paper = "Peng et al. 2023, arXiv:2309.00071"

    def inv_freq(self) -> Tensor:
        d, s = self.ctx.head_dim, self.current_scale()
        original = getattr(self, "original_length", self.ctx.train_length or self.ctx.max_len)
        return yarn_inv_freq(d, self.opts["base"], s, original)

    @property
    def mscale(self) -> float:
        return yarn_mscale(self.current_scale())

    def transform_qk(self, q: Tensor, k: Tensor, positions: Tensor, layer: int) -> tuple[Tensor, Tensor]:
        ang = self.angles(positions, layer)
        m = self.mscale
        cos, sin = torch.cos(ang) * m, torch.sin(ang) * m
        return rotate_pairs(q, cos, sin), rotate_pairs(k, cos, sin)
