"""RoPE in most blocks, no positional encoding in every few: the RoPE/NoPE hybrid (Yang et al., "Rope to Nope and
Back Again: A New Hybrid Attention Strategy", 2025, arXiv:2501.18795).

Yang et al. find that NoPE layers retrieve well over long contexts while RoPE layers carry a recency bias, and
interleave the two. In block l (0-based) of an n-block model, with k the ``nope_every`` option (default 4):

    NoPE in block l   when (l + 1) mod k = 0            (blocks k-1, 2k-1, ...: one in every k)
    RoPE otherwise    (Su et al. 2021: q and k rotated by m·θ_i, θ_i = base^(-2i/d))

which is the rule of Hugging Face's SmolLM3 and Llama 4 configurations (``no_rope_layer_interval = 4``, block l
uses RoPE unless (l + 1) % 4 == 0): three RoPE blocks to one NoPE block, the interleaving that accounts of Yang et
al.'s RNoPE and of Cohere's Command A describe. With fewer than k blocks that rule would leave no NoPE block at all
and the model would be plain RoPE, so then the **last** block is NoPE: pebench's default 2 blocks get RoPE in block
0 and NoPE in block 1. A one-block model cannot be hybrid and is RoPE. The paper's RNoPE-SWA also restricts the
RoPE layers to a sliding window; this encoding does not (pebench's attention is full and causal).

The hook is :meth:`~pebench.encodings.base.PositionalEncoding.transform_qk`, whose ``layer`` argument says which
block is asking: a NoPE block's q and k are returned unchanged.
"""

from __future__ import annotations

from typing import Any

from torch import Tensor

from pebench.encodings.base import EncodingContext
from pebench.encodings.registry import register
from pebench.encodings.rope import RoPE
from pebench.options import Option


def nope_blocks(n_layers: int, every: int) -> tuple[int, ...]:
    """The blocks without positional encoding (see the module docstring)."""
    blocks = tuple(layer for layer in range(n_layers) if (layer + 1) % every == 0)
    if not blocks and n_layers >= 2:
        blocks = (n_layers - 1,)
    return blocks


@register
class RoPENoPE(RoPE):
    name = "rope_nope"
    description = "hybrid: RoPE in most blocks, none in every 4th (the last of 2 or 3 blocks)"
    paper = "Yang et al. 2025, arXiv:2501.18795; Su et al. 2021, arXiv:2104.09864"
    options = {
        **RoPE.options,
        "nope_every": Option(4, "block l has no positional encoding when (l + 1) % nope_every == 0", type=int,
                             low=2),
    }  # fmt: skip

    def __init__(self, ctx: EncodingContext, **options: Any) -> None:
        super().__init__(ctx, **options)
        self.nope = frozenset(nope_blocks(ctx.n_layers, self.opts["nope_every"]))

    def transform_qk(self, q: Tensor, k: Tensor, positions: Tensor, layer: int) -> tuple[Tensor, Tensor]:
        if layer in self.nope:
            return q, k
        return super().transform_qk(q, k, positions, layer)

    def extra_config(self) -> dict[str, Any]:
        return {"nope_blocks": sorted(self.nope)}
