"""Randomized positional encodings (Ruoss et al., "Randomized Positional Encodings Boost Length Generalization of
Transformers", ACL 2023, arXiv:2305.16843).

A wrapper over any position-indexed encoding ``X``, named ``randomized_X``. For each training sequence of length T
the positions are an ordered random subset of [0, N) instead of 0 .. T-1,

    positions = sort(first T of a uniform random permutation of 0 .. N-1),   N = max_len,

drawn per sample, so the model sees during training every position (and every gap between positions) that a longer
evaluation sequence will produce. N is the model's ``max_len``, the longest evaluation length of the task.

Evaluation uses the plain positions 0 .. T-1 (our choice, deterministic and identical to the other encodings'
evaluation; the paper's sampling at evaluation time is not reproduced), so what generalises is the distribution of
positions seen in training. Every option of ``X`` is an option of ``randomized_X``.

``randomized_rope`` and ``randomized_learned`` are registered (they are in the suite); any other
``randomized_X`` for a position-indexed X that is not itself a wrapper resolves by name
(``--encoding randomized_alibi``).
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from torch import Tensor

from pebench.encodings import learned, rope  # noqa: F401  (registered before they are wrapped below)
from pebench.encodings.base import EncodingContext, PositionalEncoding, Wrapper
from pebench.encodings.registry import ENCODINGS, wrappable
from pebench.errors import LengthError

PREFIX = "randomized_"
REGISTERED = ("rope", "learned")

_CLASSES: dict[str, type[PositionalEncoding]] = {}


class Randomized(Wrapper):
    """The wrapped encoding with random training positions; every other hook is forwarded."""

    inner_cls: ClassVar[type[PositionalEncoding]]
    paper = "Ruoss et al. 2023, arXiv:2305.16843"

    def __init__(self, ctx: EncodingContext, **options: Any) -> None:
        super().__init__(ctx, **options)
        self.inner = self.inner_cls(ctx, **options)

    def train_positions(self, batch_size: int, length: int, generator: torch.Generator | None) -> Tensor:
        n = self.ctx.max_len
        if length > n:
            raise LengthError(f"{self.name}: training length {length} exceeds max_len {n}; valid: <= {n}")
        noise = torch.rand(batch_size, n, generator=generator)
        return noise.argsort(dim=-1)[:, :length].sort(dim=-1).values

    def extra_config(self) -> dict[str, Any]:
        return {"train_positions": "sorted random subset of [0, max_len) per sample; evaluation 0..T-1",
                **self.inner.extra_config()}


def randomized(inner_name: str) -> type[PositionalEncoding]:
    """The class ``randomized_<inner_name>`` (made once, then reused)."""
    if inner_name not in _CLASSES:
        inner_cls = ENCODINGS.get(inner_name)
        _CLASSES[inner_name] = type(
            f"Randomized_{inner_name}",
            (Randomized,),
            {
                "name": PREFIX + inner_name,
                "version": inner_cls.version,
                "inner_cls": inner_cls,
                "options": dict(inner_cls.options),
                "description": f"{inner_name} with sorted random training positions from [0, max_len)",
                "paper": f"Ruoss et al. 2023, arXiv:2305.16843 (over {inner_cls.paper})",
                "__module__": __name__,
            },
        )
    return _CLASSES[inner_name]


def _resolve(name: str) -> type[PositionalEncoding] | None:
    if not name.startswith(PREFIX):
        return None
    inner = name[len(PREFIX):]
    if inner not in wrappable():
        return None
    return randomized(inner)


ENCODINGS.add_resolver(_resolve)
for _name in REGISTERED:
    ENCODINGS.add(PREFIX + _name, randomized(_name))
