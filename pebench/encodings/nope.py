"""NoPE: no positional encoding at all.

A causal decoder can still infer position from the causal mask alone (Kazemnejad et al., "The Impact of Positional
Encoding on Length Generalization in Transformers", NeurIPS 2023; Haviv et al., "Transformer Language Models without
Positional Encodings Still Learn Positional Information", 2022). Every hook is the base class's no-op, so the model's
output depends on token order only through causal attention and is invariant to any shift of the positions.
"""

from __future__ import annotations

from pebench.encodings.base import PositionalEncoding
from pebench.encodings.registry import register


@register
class NoPE(PositionalEncoding):
    name = "nope"
    position_indexed = False
    description = "no positional information; order comes only from the causal mask"
    paper = "Kazemnejad et al. 2023, arXiv:2305.19466"
