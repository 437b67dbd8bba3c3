"""A benchmark case and the one format of its id: ``{encoding}-{task}-L{length}``, then the sweep point when the run
sweeps settings or options (``-layers4``, ``-layers4-lr0.01``: :mod:`pebench.engine.sweep`), then ``-s{seed}`` when a
run has several seeds (``rope-k_back-L64-layers4-s1``). The suite's test ids, the scheduler's model scopes, the
baseline's terminal summary and the findings' case names all build and read ids here."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")

_ID = re.compile(r"^(?P<encoding>[^-]+)-(?P<task>.+?)-L(?P<length>\d+)"
                 r"(?:-(?!s\d+$)(?P<point>[A-Za-z_][\w.+/:]+(?:-[\w.+/:]+)*?))?(?:-s(?P<seed>\d+))?$")
"""A sweep point is one or more ``{name}{value}`` joined by ``-``: it starts with a letter and is never ``s`` and a
number (the seed)."""


@dataclass(frozen=True)
class Case:
    """One benchmark case: an encoding, a task, an evaluation length, a seed and the sweep point (its id part, ""
    without a sweep)."""

    encoding: str
    task: str
    length: int
    seed: int = 0
    point: str = ""

    @property
    def id(self) -> str:
        """``rope-k_back-L64``, ``rope-k_back-L64-layers4`` at a sweep point (no seed: the id stored with a
        result)."""
        return f"{self.encoding}-{self.task}-L{self.length}{self._point}"

    @property
    def model(self) -> str:
        """``rope-k_back`` (``rope-k_back-layers4`` at a sweep point): the (encoding, task, point) every length and
        seed of which share a configuration."""
        return f"{self.encoding}-{self.task}{self._point}"

    @property
    def _point(self) -> str:
        return f"-{self.point}" if self.point else ""

    def test_id(self, seeded: bool) -> str:
        """The id with the seed when ``seeded`` (a run of several seeds): ``rope-k_back-L64-s1``."""
        return self.with_seed(self.id, self.seed) if seeded else self.id

    def model_id(self, seeded: bool) -> str:
        """The trained model's name: ``rope-k_back``, with the seed when ``seeded`` (``rope-k_back-s1``)."""
        return self.with_seed(self.model, self.seed) if seeded else self.model

    @staticmethod
    def with_seed(name: str, seed: int) -> str:
        """``name`` with the seed suffix: ``rope-k_back-L64`` and 1 give ``rope-k_back-L64-s1``."""
        return f"{name}-s{seed}"

    @classmethod
    def parse(cls, case_id: str) -> tuple[Case, bool]:
        """The case of an id (seed 0 when it carries none) and whether it carries a seed; ValueError when
        ``case_id`` is no case id. The encoding ends at the first ``-``."""
        m = _ID.match(case_id)
        if m is None:
            raise ValueError(f"not a case id: {case_id!r}")
        seed = m["seed"]
        case = cls(m["encoding"], m["task"], int(m["length"]), int(seed) if seed is not None else 0, m["point"] or "")
        return case, seed is not None


def point_of(case_id: str) -> str:
    """The sweep point of a stored case id (``""`` for none, or for anything that is no case id)."""
    try:
        return Case.parse(case_id)[0].point
    except ValueError:
        return ""


def by_point(items: Iterable[T], point: Callable[[T], str]) -> dict[str, list[T]]:
    """``items`` (results) per sweep point (``point`` of an item: its point, "" at none), to be shown apart: each
    point's own items plus those at no point (an encoding or task no sweep applies to is the same model at every
    point); ``{"": items}`` without a sweep."""
    points: dict[str, list[T]] = {}
    for item in items:
        points.setdefault(point(item), []).append(item)
    unswept = points.pop("", [])
    if not points:
        return {"": unswept}
    return {p: [*unswept, *mine] for p, mine in sorted(points.items())}
