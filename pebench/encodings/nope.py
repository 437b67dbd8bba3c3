"""NoPE: no positional encoding at all.

A causal decoder can still infer position from the causal mask alone (Kazemnejad et al., "The Impact of Positional
Encoding on Length Generalization in Transformers", NeurIPS 2023; Haviv et al., "Transformer Language Models without
Positional Encodings Still Learn Positional Information", 2022). Every hook is the base class's no-op, so the model's
output depends on token order only through causal attention and is invariant to any shift of the positions.

Depth (version 2). Position has to be computed before it can be used: Kazemnejad et al.'s Theorem 1 builds absolute
positions in a first layer from the causal mask (query t attending uniformly to its t keys reads ``1/t`` off a token
it can recognise), and a copy or reversal then needs further layers to look items up by those positions. At
pebench's default budget (600 steps; exact match in distribution, one seed) NoPE learned copy / reverse with 2
blocks 0.02 / 0.00, with 4 blocks 0.57 / 0.004 and with 6 blocks 0.74 / 0.68 (docs/encodings.md, "NoPE: what it
takes"). NoPE's models therefore have ``default_layers = 6``, the fewest blocks that learn both of Kazemnejad et
al.'s tasks pebench tests them on, unless ``--layers`` is given; version 1 used the global 2.
"""

from __future__ import annotations

from pebench.encodings.base import PositionalEncoding
from pebench.encodings.registry import register


@register
class NoPE(PositionalEncoding):
    name = "nope"
    family = "none"
    version = "2"
    position_indexed = False
    position_free = True
    default_layers = 6
    description = "no positional information; order comes only from the causal mask (6 blocks unless --layers)"
    paper = "Kazemnejad et al. 2023, arXiv:2305.19466"
