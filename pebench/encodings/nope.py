"""NoPE: no positional encoding at all.

A causal decoder can still infer position from the causal mask alone (Kazemnejad et al., "The Impact of Positional
Encoding on Length Generalization in Transformers", NeurIPS 2023; Haviv et al., "Transformer Language Models without
Positional Encodings Still Learn Positional Information", 2022). Every hook is the base class's no-op, so the model's
output depends on token order only through causal attention and is invariant to any shift of the positions.

Depth (version 2). Position has to be computed before it can be used: Kazemnejad et al.'s Theorem 1 builds absolute
positions in a first layer from the causal mask (query t attending uniformly to its t keys reads ``1/t`` off a token
it can recognise), and a copy or reversal then needs further layers to look items up by those positions. With 2
blocks at pebench's default budget NoPE learned none of copy, reverse and add_nocarry (exact match 0.02, 0.00, 0.00);
with 4 blocks copy rose to 0.57 at 600 steps and 0.94 at 2400 (docs/encodings.md, "NoPE: what it takes"). NoPE's
models therefore have ``default_layers = 4`` unless ``--layers`` is given; version 1 used the global 2.
"""

from __future__ import annotations

from pebench.encodings.base import PositionalEncoding
from pebench.encodings.registry import register


@register
class NoPE(PositionalEncoding):
    name = "nope"
    version = "2"
    position_indexed = False
    default_layers = 4
    description = "no positional information; order comes only from the causal mask (4 blocks unless --layers)"
    paper = "Kazemnejad et al. 2023, arXiv:2305.19466"
