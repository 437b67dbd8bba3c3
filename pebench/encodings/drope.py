"""DroPE: drop the positional encoding part-way through training (Gelberg et al., "Extending the Context of
Pretrained LLMs by Dropping Their Positional Embeddings", 2025, arXiv:2512.12167).

A schedule, not an encoding of its own. Training starts with a base encoding (``base``, RoPE by default) and at step

    s* = floor(drop_at · total_steps)         (drop_at ∈ (0, 1), default 0.7)

every hook of the base is switched off: steps >= s* and every evaluation run without positional encoding (as NoPE),
so the model must recalibrate to order information from the causal mask alone. Any position-indexed encoding
that is not itself a wrapper can be the base (:func:`pebench.encodings.registry.wrappable`). ``drop_at`` is an
option, so it is stored in each result's configuration (with ``train.steps``, it fixes s*). The switch is a
persistent buffer, so a model loaded from a checkpoint keeps it; the base's parameters stay in the module (and in
checkpoints).
A freshly built model (never trained) has its base encoding on.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor

from pebench.encodings.base import EncodingContext, PositionalEncoding, Wrapper
from pebench.encodings.registry import ENCODINGS, register, wrappable
from pebench.options import Option


def drop_step(drop_at: float, total_steps: int) -> int:
    """The first step trained without the base encoding."""
    return math.floor(drop_at * total_steps)


@register
class DroPE(Wrapper):
    name = "drope"
    family = "wrapper"
    description = "train with a base encoding (RoPE), drop it at a fraction of training, evaluate without it"
    paper = "Gelberg et al. 2025, arXiv:2512.12167"
    position_indexed = False  # a schedule: after the drop, positions mean nothing to it
    options = {
        "base": Option("rope", "encoding used before the drop (any position-indexed encoding)", type=str,
                       choices=wrappable),
        "drop_at": Option(0.7, "fraction of training after which the base is dropped", low=0.0, high=1.0,
                          low_open=True, high_open=True),
    }  # fmt: skip

    def __init__(self, ctx: EncodingContext, **options: Any) -> None:
        super().__init__(ctx, **options)
        self.inner = ENCODINGS.get(self.opts["base"])(ctx)
        self.register_buffer("dropped", torch.tensor(False))

    @property
    def base(self) -> PositionalEncoding:
        """The encoding used before the drop."""
        return self.inner

    @property
    def active(self) -> bool:
        return not bool(self.dropped)

    def on_step(self, step: int, total_steps: int) -> None:
        self.dropped.fill_(step >= drop_step(self.opts["drop_at"], total_steps))
        if self.active:
            self.inner.on_step(step, total_steps)

    @property
    def qk_dim(self) -> int:
        return self.inner.qk_dim if self.active else self.ctx.head_dim

    @property
    def attn_scale(self) -> float:
        return self.inner.attn_scale if self.active else self.ctx.head_dim**-0.5

    def embed(self, positions: Tensor, **keywords: Any) -> Tensor | None:
        vec = self.inner.embed(positions, **keywords)
        if vec is None or self.active:
            return vec
        # dropped: add nothing, but keep returning a (zero) vector so the model's token scaling for additive
        # encodings does not change mid-training
        return torch.zeros_like(vec)

    def transform_qk(self, q: Tensor, k: Tensor, positions: Tensor, layer: int, **keywords: Any
                     ) -> tuple[Tensor, Tensor]:  # fmt: skip
        """The base's transform (with a carried state or the hidden states, where it reads them) before the drop;
        none after."""
        return self.inner.transform_qk(q, k, positions, layer, **keywords) if self.active else (q, k)

    def attn_bias(self, q: Tensor, k: Tensor, positions: Tensor, layer: int, **keywords: Any) -> Tensor | None:
        """The base's bias (any part of it) before the drop; none after."""
        return self.inner.attn_bias(q, k, positions, layer, **keywords) if self.active else None

    def extra_config(self) -> dict[str, Any]:
        return {"schedule": "base on for steps < floor(drop_at * train.steps); off after, and at evaluation",
                "base_config": self.inner.extra_config()}
