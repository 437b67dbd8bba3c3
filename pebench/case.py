"""A benchmark case and the one format of its id: ``{encoding}-{task}-L{length}``, then the sweep point when the run
sweeps settings or options (``-layers4``, ``-layers4-lr0.01``: :mod:`pebench.engine.sweep`), then ``-s{seed}`` when a
run has several seeds (``rope-k_back-L64-layers4-s1``). The suite's test ids, the scheduler's model scopes, the
baseline's terminal summary and the findings' case names all build and read ids here.

A sweep point is typed (:class:`Point`: each swept axis's name and value, in the sweep's order); its id part is only
its text. The text cannot be split back without the axes' names (a value may hold ``-``, as in ``lr1e-05``, and a
name runs into its value, as in ``precisionbf16``), so :meth:`Point.parse` and :meth:`Case.parse` take them: the
run's sweep knows its own (:attr:`pebench.engine.sweep.Sweep.names`). A stored result keeps its point as its axes
(``results.axes``, :meth:`Point.stored` and :meth:`Point.of_stored`), so no reader of results parses a point's text
or a case id (:func:`point_of` is left to the schema migrations)."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

TIERS = ("quick", "full")
"""The evaluation tiers: which lengths of a task are cases (:meth:`pebench.tasks.base.Task.eval_lengths`; the quick
tier is the default of ``--tier``)."""

T = TypeVar("T")

_ID = re.compile(r"^(?P<encoding>[^-]+)-(?P<task>.+?)-L(?P<length>\d+)"
                 r"(?:-(?!s\d+$)(?P<point>[A-Za-z_][\w.+/:]+(?:-[\w.+/:]+)*?))?(?:-s(?P<seed>\d+))?$")
"""A sweep point is one or more ``{name}{value}`` joined by ``-``: it starts with a letter and is never ``s`` and a
number (the seed)."""

VALUE = re.compile(r"^[A-Za-z0-9_.+/:-]+$")
"""What an axis's value may be written with in a point (it becomes part of a test id)."""


@dataclass(frozen=True, order=True)
class Point(Mapping[str, str]):
    """A sweep point: axis name -> the value as written in the id (``{"layers": "4", "lr": "0.01"}``), in the
    sweep's order; ``str()`` is the id part (``layers4-lr0.01``), ``Point()`` (false, ``""``) none."""

    axes: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        names = [n for n, _ in self.axes]
        bad = next((f"{n}{v}" for n, v in self.axes if not re.match(r"^[A-Za-z_]\w*$", n) or not VALUE.match(v)), None)
        if bad is not None or len(set(names)) != len(names):
            raise ValueError(f"not a sweep point: {bad or 'an axis given twice'} in {self.axes!r}")

    @classmethod
    def of(cls, **values: object) -> Point:
        """``Point.of(layers=4, lr="0.01")``: the axes in the order given, each value as its text."""
        return cls(tuple((n, str(v)) for n, v in values.items()))

    def __getitem__(self, name: str) -> str:
        for n, v in self.axes:
            if n == name:
                return v
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return (n for n, _ in self.axes)

    def __len__(self) -> int:
        return len(self.axes)

    def __str__(self) -> str:
        return "-".join(f"{n}{v}" for n, v in self.axes)

    def stored(self) -> list[list[str]]:
        """The point as the database stores it (``results.axes``): ``[[name, value], ...]`` in the sweep's order,
        ``[]`` for none (a list, not an object: PostgreSQL's jsonb would reorder an object's keys)."""
        return [[n, v] for n, v in self.axes]

    @classmethod
    def of_stored(cls, axes: Iterable[Iterable[object]] | None) -> Point:
        """The point of its stored axes (:meth:`stored`; None or ``[]``: none), read without parsing any text."""
        return cls(tuple((str(n), str(v)) for n, v in (tuple(a) for a in axes or ())))

    @classmethod
    def parse(cls, text: str, names: Collection[str]) -> Point:
        """The point whose id part is ``text``, each axis one of ``names``: of the ways ``text`` reads so, the one
        of the most axes (``layers4-lr0.01`` is two, not layers ``4-lr0.01``); ValueError when there is none, or more
        than one (:class:`pebench.engine.sweep.Sweep` refuses values that would make a point read back otherwise)."""
        if not text:
            return cls()
        found = {p for p in _splits(text, tuple(names)) if len({n for n, _ in p}) == len(p)}
        most = max(map(len, found), default=0)
        found = {p for p in found if len(p) == most}
        if len(found) != 1:
            how = "is no point of the axes" if not found else "splits into more than one point of the axes"
            raise ValueError(f"{text!r} {how} {', '.join(sorted(names)) or '(none)'}")
        return cls(found.pop())


def _splits(text: str, names: tuple[str, ...]) -> list[tuple[tuple[str, str], ...]]:
    """Every way ``text`` reads as ``{name}{value}`` parts joined by ``-``, each name one of ``names``."""
    out = []
    for name in (n for n in names if text.startswith(n) and len(text) > len(n)):
        rest = text[len(name):]
        if VALUE.match(rest):
            out.append(((name, rest),))
        for j in (j for j, ch in enumerate(rest) if ch == "-" and 0 < j < len(rest) - 1):
            out += [((name, rest[:j]), *tail) for tail in _splits(rest[j + 1:], names)]
    return out


@dataclass(frozen=True)
class Case:
    """One benchmark case: an encoding, a task, an evaluation length, a seed and the sweep point (``Point()``
    without a sweep)."""

    encoding: str
    task: str
    length: int
    seed: int = 0
    point: Point = field(default_factory=Point)

    def __post_init__(self) -> None:
        if not isinstance(self.point, Point):
            raise TypeError(f"Case.point is a Point, not {type(self.point).__name__} ({self.point!r})")

    @property
    def id(self) -> str:
        """``rope-k_back-L64``, ``rope-k_back-L64-layers4`` at a sweep point (no seed: the id stored with a
        result)."""
        return case_id(self.encoding, self.task, self.length, str(self.point))

    @property
    def model(self) -> str:
        """``rope-k_back`` (``rope-k_back-layers4`` at a sweep point): the (encoding, task, point) every length and
        seed of which share a configuration."""
        return model_name(self.encoding, self.task, str(self.point))

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
    def parse(cls, text: str, names: Collection[str] = ()) -> tuple[Case, bool]:
        """The case of an id (seed 0 when it carries none) and whether it carries a seed, its point read with the
        axis names ``names`` (a run's sweep's); ValueError when ``text`` is no case id or its point is none of
        those axes. The encoding ends at the first ``-``."""
        m = _ID.match(text)
        if m is None:
            raise ValueError(f"not a case id: {text!r}")
        try:
            point = Point.parse(m["point"] or "", names)
        except ValueError as err:
            raise ValueError(f"not a case id of these sweep axes: {text!r}: {err}") from None
        seed = m["seed"]
        return cls(m["encoding"], m["task"], int(m["length"]), int(seed) if seed is not None else 0, point), \
            seed is not None  # fmt: skip


def case_id(encoding: str, task: str, length: int, point: str = "") -> str:
    """The id of a case from its parts, the point as its id part: ``rope-k_back-L64-layers4``."""
    return f"{encoding}-{task}-L{length}{f'-{point}' if point else ''}"


def model_name(encoding: str, task: str, point: str = "") -> str:
    """The name of the model of a case from its parts, the point as its id part: ``rope-k_back-layers4``."""
    return f"{encoding}-{task}{f'-{point}' if point else ''}"


def point_of(text: str) -> str:
    """The id part of the sweep point of a stored case id (``""`` for none, or for anything that is no case id)."""
    m = _ID.match(text)
    return (m["point"] or "") if m else ""


def model_of_id(text: str) -> tuple[str, int] | None:
    """(the model's name, ``rope-k_back-layers4``, and the length) of a case id; None for what is no case id."""
    m = _ID.match(text)
    return None if m is None else (model_name(m["encoding"], m["task"], m["point"] or ""), int(m["length"]))


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
