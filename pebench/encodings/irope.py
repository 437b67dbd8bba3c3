"""iRoPE with attention temperature tuning, the attention of Llama 4 (Meta AI, "The Llama 4 herd", 2025; the
constants and the formula from Hugging Face ``transformers``' ``models/llama4/configuration_llama4.py`` and
``modeling_llama4.py``, ``Llama4TextAttention.forward``).

Interleaved blocks: RoPE in most, none in every k-th (k = ``nope_every`` = 4, HF's ``no_rope_layer_interval``:
block l is NoPE when (l + 1) mod 4 = 0), chosen exactly as :mod:`pebench.encodings.rope_nope` chooses them (with
fewer than k blocks the last is NoPE, so the default 2 blocks are RoPE then NoPE). In the NoPE blocks only, the
query at position p is multiplied by the temperature

    τ(p) = log(floor((p + 1) / floor_scale) + 1) · attn_scale + 1,     (HF: ``torch.log1p(torch.floor((cache_position
                                                                          + 1) / floor_scale)) * attn_scale + 1``)

defaults floor_scale = 8192 and attn_scale = 0.1 (``Llama4TextConfig``; ``attn_temperature_tuning`` True). τ is a
step function of the position: 1 for p + 1 < floor_scale, 1 + attn_scale·ln 2 from p + 1 = floor_scale, 1 +
attn_scale·ln 3 from 2·floor_scale, and so on, a log-n sharpening of the NoPE blocks' softmax in the spirit of
scalable softmax (Nakanishi 2025, arXiv:2501.19399, which HF's code cites), but fixed, not learned. HF applies it
to the query just before the 1/sqrt(d) scaled dot product (its NoPE blocks have no QK-norm); k is untouched. The
RoPE blocks are plain RoPE (Su et al. 2021), bit for bit ``rope`` at the same ``base``.

**At pebench's lengths (at most 1024 tokens) the reference floor_scale 8192 makes τ exactly 1**: with the defaults
``irope`` is ``rope_nope``, and the temperature matters only beyond 8191 tokens. The default follows the reference;
option ``floor_scale`` (e.g. 16: τ rises at positions 15, 31, 47 ...) makes the temperature act at pebench's
lengths. Here p is the position the encoding is given (HF's cache position, which is 0 .. T-1 as here unless a
wrapper moves the positions): τ reads absolute positions, so the encoding is not shift-invariant in general
(``shift_invariant = False``; it is invariant while every p + 1 stays below floor_scale).

Left out, from the same reference: the chunked attention of Llama 4's RoPE blocks (``attention_chunk_size`` 8192,
``layer_types`` "chunked_attention": a RoPE block attends only within its chunk of 8192 tokens) is the full causal
mask at every length up to 8192, so leaving it out changes nothing at pebench's lengths; the parameter-free L2
QK-norm of the RoPE blocks (``use_qk_norm``, on in Scout, off in the 128-expert model) is a separate ingredient
(see ``nope_qknorm`` for QK-norm) and is not applied, so the RoPE blocks stay those of ``rope``. RoPE's base stays
pebench's 10000 (Llama 4's ``rope_theta`` is 500000; option ``base``), as in ``rope`` and ``rope_nope``.

The hook is :meth:`~pebench.encodings.base.PositionalEncoding.transform_qk` with its ``layer`` argument.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from pebench.encodings.registry import register
from pebench.encodings.rope import positions_for_heads
from pebench.encodings.rope_nope import RoPENoPE
from pebench.options import Option

FLOOR_SCALE = 8192  # Llama4TextConfig.floor_scale
ATTN_SCALE = 0.1  # Llama4TextConfig.attn_scale


def temperature(positions: Tensor, floor_scale: float, attn_scale: float) -> Tensor:
    """τ(p) = log(floor((p + 1) / floor_scale) + 1)·attn_scale + 1 in float32, shaped to multiply queries: ``(T,)``
    -> ``(T, 1)``, ``(B, T)`` -> ``(B, 1, T, 1)``."""
    p = positions_for_heads(positions)
    return torch.log1p(torch.floor((p + 1.0) / floor_scale)) * attn_scale + 1.0


@register
class IRoPE(RoPENoPE):
    name = "irope"
    description = ("Llama 4's iRoPE: RoPE, no encoding in every 4th block, where queries are scaled by "
                   "log(floor((p+1)/floor_scale)+1)·attn_scale+1")  # fmt: skip
    paper = "Meta AI 2025 (Llama 4; HF transformers modeling_llama4); Nakanishi 2025, arXiv:2501.19399"
    shift_invariant = False  # τ reads absolute positions (invariant only below floor_scale - 1)
    options = {
        **RoPENoPE.options,
        "floor_scale": Option(FLOOR_SCALE, "τ steps up every floor_scale positions (Llama 4: 8192, so τ = 1 below "
                              "8191)", type=int, low=1),
        "attn_scale": Option(ATTN_SCALE, "strength of the NoPE blocks' query temperature (Llama 4: 0.1; 0: none)",
                             low=0.0),
    }  # fmt: skip

    def transform_qk(self, q: Tensor, k: Tensor, positions: Tensor, layer: int) -> tuple[Tensor, Tensor]:
        if layer not in self.nope:
            return super().transform_qk(q, k, positions, layer)
        tau = temperature(positions.to(q.device), self.opts["floor_scale"], self.opts["attn_scale"])
        return (q * tau).to(q.dtype), k

    def extra_config(self) -> dict[str, Any]:
        return {**super().extra_config(),
                "temperature": "NoPE blocks: q times log(floor((p + 1) / floor_scale) + 1) * attn_scale + 1"}
