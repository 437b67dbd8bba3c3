"""Randomized positional encodings (Ruoss et al., "Randomized Positional Encodings Boost Length Generalization of
Transformers", ACL 2023, arXiv:2305.16843).

A wrapper over any position-indexed encoding ``X``, named ``randomized_X``. A sequence of T tokens is given, instead
of 0 .. T-1, an ordered uniform random subset of [0, L) as its positions,

    positions = sort(first T of a uniform random permutation of 0 .. L-1),   T <= L,   L = option max_position,

drawn independently for every sequence, so the model sees during training every position (and every gap between
positions) that a longer evaluation sequence will produce. ``X`` then encodes these positions as it would 0 .. T-1.

Evaluation, option ``eval_positions``:

* ``random`` (default, the paper's protocol): every evaluation sequence gets its own draw of the same kind, from the
  evaluation's seeded generator (:meth:`~pebench.encodings.base.PositionalEncoding.positions`), so results
  stay deterministic. This is what the reference implementation does (google-deepmind/randomized_positional_encodings:
  ``models/positional_encodings.py`` samples a new ordered subset on every forward call, at test time too, and
  ``experiments/range_evaluation.py`` gives every evaluation batch a fresh random key; the authors confirm it in
  the repository's issue #1). The reference draws one subset per batch, shared by its sequences; here every
  sequence draws its own, in training and evaluation (the same distribution per sequence, less variance per batch).
* ``plain``: 0 .. T-1, as every other encoding is evaluated. The model then sees at evaluation a gap pattern
  (all gaps 1) that is rare in training, which is why it usually scores far lower.

``eval_positions`` changes only evaluation (an evaluation-only option): a model trained once serves both protocols.

``max_position`` is L (default 2048, the paper's value in ``experiments/example.py``). It must be at least the
model's ``max_len`` (the task's longest evaluation sequence, in tokens): a shorter L is an error. The wrapped
encoding is built with ``max_len = L``, so a table-based one (``learned``) has L rows; with random positions every
row receives a gradient during training (each row is drawn with probability T/L per sequence).

Every option of ``X`` is an option of ``randomized_X``. ``randomized_rope`` and ``randomized_learned`` are
registered (they are in the suite); any other ``randomized_X`` for a position-indexed X that is not itself a wrapper
resolves by name (``--encoding randomized_alibi``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar

import torch
from torch import Tensor

from pebench.encodings import learned, rope  # noqa: F401  (registered before they are wrapped below)
from pebench.encodings.base import EncodingContext, PositionalEncoding, Wrapper
from pebench.encodings.registry import wrappable, wrapper_family
from pebench.errors import LengthError, OptionError
from pebench.options import Option

PREFIX = "randomized_"
REGISTERED = ("rope", "learned")
VERSION = "2"
"""The wrapper's own version, appended to the wrapped encoding's (2: positions from [0, max_position) and random
evaluation positions by default; 1 drew from [0, max_len) and evaluated on 0..T-1)."""
MAX_POSITION = 2048  # L in the paper's experiments/example.py

OPTIONS = {
    "eval_positions": Option("random", "positions at evaluation: random (an ordered random subset of [0, "
                             "max_position) per sequence, the paper's protocol) or plain (0..T-1)", type=str,
                             choices=("random", "plain"), eval_only=True),
    "max_position": Option(MAX_POSITION, "L: positions are drawn from [0, L); at least the longest evaluation "
                           "sequence", type=int, low=1),
}  # fmt: skip



def random_positions(batch_size: int, length: int, limit: int, generator: torch.Generator | None) -> Tensor:
    """``(batch_size, length)``: per row, a uniform random subset of ``length`` positions of [0, limit), sorted."""
    noise = torch.rand(batch_size, limit, generator=generator)
    return noise.argsort(dim=-1)[:, :length].sort(dim=-1).values


class Randomized(Wrapper):
    """The wrapped encoding with random positions (see the module docstring); every other hook is forwarded."""

    inner_cls: ClassVar[type[PositionalEncoding]]
    paper = "Ruoss et al. 2023, arXiv:2305.16843"
    family = "wrapper"

    def __init__(self, ctx: EncodingContext, **options: Any) -> None:
        super().__init__(ctx, **options)
        self.limit = int(self.opts["max_position"])
        if self.limit < ctx.max_len:
            raise OptionError(
                f"encoding {self.name}: option max_position={self.limit} is below the longest evaluation sequence "
                f"({ctx.max_len} tokens); valid: max_position >= {ctx.max_len}"
            )
        inner_options = {k: v for k, v in self.opts.items() if k not in OPTIONS}
        self.inner = self.inner_cls(replace(ctx, max_len=self.limit), **inner_options)

    def _draw(self, what: str, batch_size: int, length: int, generator: torch.Generator | None) -> Tensor:
        if length > self.limit:
            raise LengthError(
                f"{self.name}: {what} length {length} exceeds max_position {self.limit}; valid: <= {self.limit}"
            )
        return random_positions(batch_size, length, self.limit, generator)

    def positions(self, batch_size: int, length: int, generator: torch.Generator | None, train: bool
                  ) -> Tensor | None:  # fmt: skip
        if train:
            return self._draw("training", batch_size, length, generator)
        if self.opts["eval_positions"] == "plain":
            return None
        return self._draw("evaluation", batch_size, length, generator)

    def extra_config(self) -> dict[str, Any]:
        drawn = f"sorted uniform random subset of [0, {self.limit}) per sequence"
        evaluation = (f"{drawn}, from the evaluation's seeded generator (Ruoss et al. 2023)"
                      if self.opts["eval_positions"] == "random" else "0..T-1")  # fmt: skip
        return {"train_positions": drawn, "eval_positions_protocol": evaluation, **self.inner.extra_config()}


randomized = wrapper_family(PREFIX, Randomized, OPTIONS, REGISTERED, wrappable, lambda inner_cls: {
    "version": f"{inner_cls.version}-r{VERSION}",
    "description": f"{inner_cls.name} at sorted random positions from [0, max_position), in training and (by default) "
                   "evaluation",
    "paper": f"Ruoss et al. 2023, arXiv:2305.16843 (over {inner_cls.paper})"})  # fmt: skip
"""The class ``randomized_<X>`` of encoding X (made once, then reused)."""
