"""How far: the longest evaluation length up to which an encoding keeps what it learned, as a multiple of the
training length. Pure functions over normalised scores (:func:`pebench.analysis.scoring.normalised`: 0 = chance,
1 = perfect, for a higher- or lower-is-better metric alike; a diverged model counts as chance, an errored case has
no score).

* **Reference**: the encoding's normalised score at the training length -- the mean over its seeds. Where the
  training length itself was not evaluated, the longest evaluated length below it.
* **Not learned** (shown ``–``): no reference, or a reference below :data:`~pebench.analysis.scoring.LEARNED` (0.5,
  the *learned* verdict). Without this rule a model at chance would "keep 90% of" a score of 0 at every length and
  reach the longest one; so a reference at chance, or anywhere below half-way to perfect, has no reach.
* **Qualifies**: a longer length whose normalised score (mean over seeds) is at least :data:`FRACTION` (90%) of the
  reference.
* **Reach** (contiguous): the longest length ``L`` such that *every* evaluated length from the training length up to
  ``L`` qualifies -- a model that fails at 2x and recovers at 8x reaches 1x, not 8x, since the recovery is not
  something one can rely on. A length without any score for this encoding (not run, or every seed errored) is not
  evaluated for it and is skipped; a diverged seed counts as chance and so usually fails the length.
* **Multiple**: ``L / train_length`` (``1×`` when the first longer length already fails, or when no longer length
  was evaluated); shown as ``4×``, ``1.5×``.
* **Across tasks** (:func:`keeps`, the leaderboard's *keeps 2×* and *keeps 4×* columns): on how many tasks the reach
  is at least twice (four times) the training length. The lower median of the multiples over the tasks, the
  leaderboard's former *how far* column, was ``1×`` for 43 of the reference's 44 ranked encodings and told them
  nothing apart (issue 91); the counts separate them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pebench.analysis.scoring import LEARNED, mean

FRACTION = 0.9
"""The share of the reference score a longer length must keep."""


@dataclass(frozen=True)
class Reach:
    """How far one encoding carries one task: ``length`` is the longest contiguous qualifying evaluation length
    (None when not learned)."""

    train_length: int
    length: int | None = None
    reference: float | None = None
    """The normalised score at the training length (mean over seeds); None when not evaluated there."""

    @property
    def learned(self) -> bool:
        return self.length is not None

    @property
    def multiple(self) -> float | None:
        return None if self.length is None else self.length / self.train_length

    @property
    def text(self) -> str:
        return multiple_text(self.multiple)

    @property
    def tip(self) -> str:
        if self.reference is None:
            return "not evaluated at or below the training length"
        if self.length is None:
            return f"not learned: normalised score {self.reference:.2f} at the training length (below {LEARNED})"
        return f"{self.reference:.2f} at the training length, ≥ {FRACTION:.0%} of it up to {self.length}"


def multiple_text(multiple: float | None) -> str:
    """``4×``, ``1.5×``; ``–`` for None or 0."""
    return "–" if not multiple else f"{multiple:.3g}×"


def reach(
    norms: Mapping[int, Iterable[float | None]],
    train_length: int,
    fraction: float = FRACTION,
    learned: float = LEARNED,
) -> Reach:
    """The :class:`Reach` of one encoding on one task from ``norms``: evaluation length -> the per-seed normalised
    scores there (None for a seed without one). See the module docstring for the rules."""
    means = {int(L): m for L, values in norms.items() if (m := mean(values)) is not None}
    below = [L for L in means if train_length >= L]
    if not below:
        return Reach(train_length)
    ref_length = max(below)
    reference = means[ref_length]
    if reference < learned:
        return Reach(train_length, None, reference)
    longest = ref_length
    for L in sorted(x for x in means if x > ref_length):
        if means[L] < fraction * reference - 1e-12:
            break
        longest = L
    return Reach(train_length, longest, reference)


def keeps(reaches: Iterable[Reach], multiple: float) -> int:
    """On how many tasks an encoding keeps at least :data:`FRACTION` of its normalised score at the training length
    at every evaluated length up to ``multiple`` times the training length: the reaches (one per task) whose multiple
    is at least ``multiple``. A task not learned never counts. The leaderboard's *keeps 2×* and *keeps 4×* columns."""
    return sum(1 for r in reaches if r.multiple is not None and r.multiple >= multiple - 1e-9)
