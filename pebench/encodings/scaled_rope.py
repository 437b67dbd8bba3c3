"""RoPE variants for length extrapolation: position interpolation (``pi``), dynamic NTK-aware base scaling
(``ntk``), YaRN (``yarn``), Llama 3.1's scaling (``llama3``) and LongRoPE (``longrope``). Each rescales RoPE's
frequencies θ_i = base^(-2i/d) by a factor s.

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
* ``llama3`` (Llama 3.1's frequency-dependent scaling: ``apply_scaling`` in Meta's reference code, whose comment
  says the values came from a grid search; Llama Team 2024, "The Llama 3 Herd of Models", arXiv:2407.21783; as in
  ``_compute_llama3_parameters``): with L_orig the original context, low/high frequency factors l = 1 and h = 4
  and the wavelength λ_i = 2π / θ_i,

      θ'_i = θ_i                          when λ_i < L_orig / h       (high frequencies: kept)
      θ'_i = θ_i / s                      when λ_i > L_orig / l       (low frequencies: interpolated)
      θ'_i = (1 - γ_i) θ_i / s + γ_i θ_i  otherwise, γ_i = (L_orig / λ_i - l) / (h - l)

  and no attention factor. Llama 3.1 uses s = 8 (the ``factor`` default of this encoding's train mode).
* ``longrope`` (Ding et al. 2024, "LongRoPE: Extending LLM Context Window Beyond 2 Million Tokens",
  arXiv:2402.13753; Phi-3's form, as in ``_compute_longrope_parameters``): one rescale factor λ_i per frequency,

      θ'_i = 1 / (λ_i · base^(2i/d)) = θ_i / λ_i,
      λ = short_factor at lengths <= L_orig,  λ = long_factor beyond,
      attention factor a = sqrt(1 + ln s / ln L_orig)  (1 when s <= 1), multiplied into cos and sin,

  so q·k is scaled by a². LongRoPE *searches* the factors for each model and target length; pebench has no such
  search, so the defaults are not searched values: ``short_factor = ones`` (RoPE within the original context) and
  ``long_factor = ntk``, the NTK-aware ramp λ_i = s^(2i/(d-2)), rising monotonically from 1 at the highest frequency
  to s at the lowest (the factors of ``ntk`` with α = 1). Either option also takes d/2 explicit factors, written
  ``1;1.5;2;4`` (used as given whatever s is). L_orig is the training length, so training (lengths <= L_orig)
  always uses the short factors; an evaluation longer than L_orig uses the long ones.
"""

from __future__ import annotations

import math
import re
from typing import Any, ClassVar

import torch
from torch import Tensor

from pebench.encodings.base import EncodingContext
from pebench.encodings.extension import Extension
from pebench.encodings.registry import register
from pebench.encodings.rope import RoPE, rope_inv_freq, rotate_pairs
from pebench.errors import OptionError
from pebench.options import Option

MODES = ("eval", "train")


class ScaledRoPE(RoPE):
    """RoPE whose frequencies depend on a scale factor s, set by the mode (see the module docstring). With
    ``--extend F`` each continues RoPE's trained model and applies s = F (train mode) from the fine-tune on."""

    extension: ClassVar[Extension] = Extension(base="rope", factor="factor", options={"mode": "train"})

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

    @property
    def attention_factor(self) -> float:
        """Multiplied into cos and sin, so q·k is scaled by its square (YaRN's mscale, LongRoPE's factor); 1 here."""
        return 1.0

    def transform_qk(self, q: Tensor, k: Tensor, positions: Tensor, layer: int) -> tuple[Tensor, Tensor]:
        m = self.attention_factor
        if m == 1.0:
            return super().transform_qk(q, k, positions, layer)
        ang = self.angles(positions, layer)
        cos, sin = torch.cos(ang) * m, torch.sin(ang) * m
        return rotate_pairs(q, cos, sin), rotate_pairs(k, cos, sin)

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

    @property
    def attention_factor(self) -> float:
        return self.mscale


def llama3_inv_freq(dim: int, base: float, scale: float, original_length: int,
                    low_freq_factor: float = 1.0, high_freq_factor: float = 4.0) -> Tensor:
    """Llama 3.1's frequencies θ'_i for head width ``dim`` (float32); see the module docstring."""
    theta = rope_inv_freq(dim, base).to(torch.float64)
    wavelength = 2 * math.pi / theta
    smooth = (original_length / wavelength - low_freq_factor) / (high_freq_factor - low_freq_factor)
    band = (1.0 - smooth) * theta / scale + smooth * theta
    low = torch.where(wavelength > original_length / low_freq_factor, theta / scale, band)
    return torch.where(wavelength < original_length / high_freq_factor, theta, low).to(torch.float32)


@register
class Llama3(ScaledRoPE):
    name = "llama3"
    description = "RoPE with Llama 3.1's scaling: high frequencies kept, low ones divided by s, a smooth band between"
    paper = "Llama Team 2024, arXiv:2407.21783 (Llama 3.1 reference apply_scaling)"
    options = {
        **ScaledRoPE.options,
        "factor": Option(8.0, "scale factor s used in train mode (Llama 3.1: 8)", low=1.0),
        "low_freq_factor": Option(1.0, "l: wavelengths above L_orig/l are divided by s", low=0.0, low_open=True),
        "high_freq_factor": Option(4.0, "h (> l): wavelengths below L_orig/h are kept", low=0.0, low_open=True),
    }

    def inv_freq(self) -> Tensor:
        low, high = self.opts["low_freq_factor"], self.opts["high_freq_factor"]
        if high <= low:
            raise OptionError(f"encoding {self.name}: option high_freq_factor={high!r} must exceed "
                              f"low_freq_factor={low!r}; valid: float in ({low:g}, inf)")
        original = getattr(self, "original_length", self.ctx.train_length or self.ctx.max_len)
        return llama3_inv_freq(self.ctx.head_dim, self.opts["base"], self.current_scale(), original, low, high)


FACTOR_PRESETS = ("ones", "ntk")


def longrope_factors(spec: str, dim: int, scale: float, owner: str = "longrope", option: str = "factor") -> Tensor:
    """LongRoPE's rescale factors λ_i, i = 0 .. dim/2 - 1 (float64): ``ones``; ``ntk``, the ramp s^(2i/(dim-2));
    or dim/2 positive numbers separated by ``;`` (commas and brackets are read too, so a Python list's text works)."""
    n = dim // 2
    if spec == "ones" or (spec == "ntk" and n == 1):
        return torch.ones(n, dtype=torch.float64)
    if spec == "ntk":
        return scale ** (torch.arange(n, dtype=torch.float64) / (n - 1))
    valid = f"valid: {' or '.join(repr(p) for p in FACTOR_PRESETS)}, or {n} positive numbers separated by ';'"
    try:
        values = [float(v) for v in re.split(r"[;,\s]+", spec.strip().strip("[]()").strip()) if v]
    except ValueError:
        raise OptionError(f"encoding {owner}: option {option}={spec!r} is not a list of numbers; {valid}") from None
    if len(values) != n or not all(math.isfinite(v) and v > 0 for v in values):
        raise OptionError(f"encoding {owner}: option {option}={spec!r} needs {n} positive factors (head_dim {dim} "
                          f"/ 2), got {len(values)}; {valid}")
    return torch.tensor(values, dtype=torch.float64)


def longrope_attention_factor(scale: float, original_length: int) -> float:
    """sqrt(1 + ln s / ln L_orig), 1 for s <= 1 (Hugging Face's default for LongRoPE)."""
    if scale <= 1.0 or original_length <= 1:
        return 1.0
    return math.sqrt(1.0 + math.log(scale) / math.log(original_length))


@register
class LongRoPE(ScaledRoPE):
    name = "longrope"
    description = "RoPE with per-frequency rescale factors (short within L_orig, long beyond), √(1+ln s/ln L) factor"
    paper = "Ding et al. 2024, arXiv:2402.13753 (Phi-3 form)"
    options = {
        **ScaledRoPE.options,
        "short_factor": Option("ones", "λ at lengths <= L_orig: 'ones', 'ntk' or d/2 numbers 'a;b;...'", type=str),
        "long_factor": Option("ntk", "λ beyond L_orig: 'ntk' (s^(2i/(d-2)), not searched), 'ones' or d/2 numbers",
                              type=str),
    }

    def __init__(self, ctx: EncodingContext, **options: Any) -> None:
        self.long = False
        super().__init__(ctx, **options)
        self.factors("long_factor")  # a bad list is reported now, not at the first long evaluation

    def factors(self, which: str) -> Tensor:
        """λ from option ``which`` at the current scale."""
        return longrope_factors(self.opts[which], self.ctx.head_dim, self.current_scale(), self.name, which)

    def inv_freq(self) -> Tensor:
        theta = rope_inv_freq(self.ctx.head_dim, self.opts["base"]).to(torch.float64)
        return (theta / self.factors("long_factor" if self.long else "short_factor")).to(torch.float32)

    @property
    def attention_factor(self) -> float:
        return longrope_attention_factor(self.current_scale(), self.original_length)

    def configure_eval(self, train_length: int, eval_length: int) -> None:
        if self.opts["mode"] == "eval":
            self.scale = max(1.0, eval_length / train_length)
            self.original_length = train_length
        self.long = eval_length > self.original_length
        self.refresh()

    def extra_config(self) -> dict[str, Any]:
        return {**super().extra_config(),
                "factor_rule": "short_factor at lengths <= the original context (training length), long_factor beyond"}
