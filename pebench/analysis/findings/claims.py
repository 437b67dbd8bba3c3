"""The vocabulary of a finding: a :class:`Term` (one encoding's score on a task at multiples of the training length),
a :class:`Check` (an inequality between a term and a number or another term) and a :class:`Finding` (a published
claim: its paper, what it measured, and the checks that test it).

Terms are built by metric (:func:`accuracy`, :func:`exact_match`, :func:`perplexity`, or :func:`normalised` for the
0-chance-1-perfect score of any metric) and compared with Python's operators, so a claim reads as it is written::

    accuracy("rope", "k_back", 2) >= 0.95
    perplexity("alibi", "lm", 4) <= 1.05 * perplexity("alibi", "lm", 1)
    approx(perplexity("alibi", "lm", 1), perplexity("rope", "lm", 1), within=0.05, relative=True)

Each of those is data (no code runs at evaluation but the comparison itself), so it can be listed, rendered and
checked for the cases it needs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from pebench import metrics

DIAGNOSTICS = ("attn_entropy", "local_mass", "sink_mass", "position_probe", "logit_range", "logit_range_ratio")
"""The mechanism diagnostics a result stores in its metrics (:data:`pebench.engine.diagnostics.DIAGNOSTICS`,
docs/diagnostics.md), which a term may read as its metric."""
METRICS = (*metrics.available(), "normalised", *DIAGNOSTICS)
"""What a term measures: a registered task metric (:mod:`pebench.metrics`) in its own units (a fraction for accuracy
and exact match), the normalised score (:meth:`pebench.metrics.Metric.normalise`: 0 = chance, 1 = perfect), or one
of the :data:`DIAGNOSTICS`."""

OPS = (">=", "<=", ">", "<", "~=")
QUICK_MULTIPLES = (1.0, 2.0, 4.0)
"""Multiples of the training length that every task's quick tier evaluates (the full tier adds more)."""

_UNICODE = {">=": "≥", "<=": "≤", ">": ">", "<": "<", "~=": "≈"}


def op_text(op: str, unicode: bool = True) -> str:
    """``>=`` as ``≥`` (or as itself without ``unicode``)."""
    return _UNICODE[op] if unicode else op


def multiple_text(m: float, unicode: bool = True) -> str:
    return f"{m:g}{'×' if unicode else 'x'}"


@dataclass(frozen=True, eq=False)
class Term:
    """``factor`` x (the mean over ``tasks`` x ``multiples`` of ``encoding``'s ``metric``) + ``offset``: per seed the
    mean over the cells, then the mean over seeds. A multiple is of the task's training length (2 = twice it)."""

    metric: str
    encoding: str
    tasks: tuple[str, ...]
    multiples: tuple[float, ...]
    group: str = ""
    """A name for ``tasks`` shown instead of the list (``Chomsky tasks``)."""
    point: str = ""
    """The sweep point of the results read (``ext2x``: the models continued at twice the training length,
    :mod:`pebench.engine.extension`); "" the from-scratch protocol's."""
    factor: float = 1.0
    offset: float = 0.0

    def __post_init__(self) -> None:
        if self.metric not in METRICS:
            raise ValueError(f"term metric {self.metric!r}; valid: {', '.join(METRICS)}")
        if not self.encoding or not self.tasks or not self.multiples:
            raise ValueError("a term needs an encoding, at least one task and at least one length multiple")
        if any(not (m > 0 and math.isfinite(m)) for m in self.multiples):
            raise ValueError(f"length multiples must be positive numbers, got {self.multiples}")
        if not (self.factor > 0 and math.isfinite(self.factor)) or not math.isfinite(self.offset):
            raise ValueError("a term's factor must be positive and its offset finite")

    # -- arithmetic: a positive scale and an offset, enough for "a <= 1.05 * b" and "a >= b + 0.1" ----------------
    def __mul__(self, k: float) -> Term:
        return replace(self, factor=self.factor * float(k), offset=self.offset * float(k))

    __rmul__ = __mul__

    def __add__(self, c: float) -> Term:
        return replace(self, offset=self.offset + float(c))

    __radd__ = __add__

    def __sub__(self, c: float) -> Term:
        return self + (-float(c))

    # -- comparisons build checks ------------------------------------------------------------------------------
    def __ge__(self, other: Side) -> Check:  # type: ignore[override]
        return Check(self, ">=", other)

    def __le__(self, other: Side) -> Check:  # type: ignore[override]
        return Check(self, "<=", other)

    def __gt__(self, other: Side) -> Check:  # type: ignore[override]
        return Check(self, ">", other)

    def __lt__(self, other: Side) -> Check:  # type: ignore[override]
        return Check(self, "<", other)

    @property
    def base(self) -> Term:
        """The term without its factor and offset."""
        return replace(self, factor=1.0, offset=0.0)

    def scale(self, value: float) -> float:
        return self.factor * value + self.offset

    def cells(self) -> list[tuple[str, float]]:
        return [(t, m) for t in self.tasks for m in self.multiples]

    def text(self, unicode: bool = True) -> str:
        """``accuracy(rope, k_back @ 2×)``; several tasks or lengths are averaged (``mean accuracy(...)``)."""
        tasks = self.group or (self.tasks[0] if len(self.tasks) == 1 else "{" + ", ".join(self.tasks) + "}")
        at = ",".join(multiple_text(m, unicode) for m in self.multiples)
        mean = "mean " if len(self.tasks) > 1 or len(self.multiples) > 1 else ""
        at = f"{at} {self.point}" if self.point else at
        core = f"{mean}{self.metric}({self.encoding}, {tasks} @ {at})"
        if self.factor != 1.0:
            core = f"{self.factor:g} {'×' if unicode else '*'} {core}"
        if self.offset:
            core = f"{core} {'+' if self.offset > 0 else '-'} {abs(self.offset):g}"
        return core


Side = Term | float | int


@dataclass(frozen=True)
class Check:
    """``left op right``; for ``~=`` (approximately equal): ``|left - right| <= within``, or with ``relative``
    ``max/min <= 1 + within`` (both positive)."""

    left: Term
    op: str
    right: Term | float
    within: float = 0.0
    relative: bool = False

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ValueError(f"operator {self.op!r}; valid: {', '.join(OPS)}")
        if isinstance(self.right, Term):
            if self.right.metric != self.left.metric:
                raise ValueError(f"{self.left.text()} and {self.right.text()} are on different metrics")
        elif isinstance(self.right, (int, float)) and not isinstance(self.right, bool):
            object.__setattr__(self, "right", float(self.right))
        else:
            raise ValueError(f"the right side of a check is a term or a number, got {self.right!r}")
        if (self.op == "~=") != (self.within > 0) or (self.relative and self.op != "~="):
            raise ValueError("'within' (> 0) and 'relative' belong to ~= checks only, and ~= needs 'within'")

    def terms(self) -> list[Term]:
        return [self.left] + ([self.right] if isinstance(self.right, Term) else [])

    def holds(self, left: float, right: float) -> bool:
        """Whether the inequality holds for these values of its two sides (factors and offsets applied)."""
        if self.op == ">=":
            return left >= right
        if self.op == "<=":
            return left <= right
        if self.op == ">":
            return left > right
        if self.op == "<":
            return left < right
        if self.relative:
            lo, hi = sorted((left, right))
            return lo > 0 and hi <= (1.0 + self.within) * lo
        return abs(left - right) <= self.within

    def text(self, unicode: bool = True) -> str:
        right = self.right.text(unicode) if isinstance(self.right, Term) else f"{self.right:g}"
        out = f"{self.left.text(unicode)} {op_text(self.op, unicode)} {right}"
        if self.op == "~=":
            out += f" (within {self.within:.0%} relative)" if self.relative else f" (within {self.within:g})"
        return out


def approx(left: Term, right: Term, within: float, relative: bool = False) -> Check:
    """``left ≈ right``: within ``within`` absolute, or relative (``max/min <= 1 + within``)."""
    return Check(left, "~=", right, within=within, relative=relative)


def _term(metric: str, encoding: str, tasks: str | Sequence[str], at: Sequence[float], group: str, point: str = ""
          ) -> Term:  # fmt: skip
    names = (tasks,) if isinstance(tasks, str) else tuple(tasks)
    return Term(metric, encoding, names, tuple(float(m) for m in at), group, point)


def accuracy(encoding: str, tasks: str | Sequence[str], *at: float, group: str = "", point: str = "") -> Term:
    """Accuracy (a fraction) of ``encoding`` on ``tasks`` at multiples ``at`` of the training length."""
    return _term("accuracy", encoding, tasks, at, group, point)


def exact_match(encoding: str, tasks: str | Sequence[str], *at: float, group: str = "", point: str = "") -> Term:
    return _term("exact_match", encoding, tasks, at, group, point)


def perplexity(encoding: str, tasks: str | Sequence[str], *at: float, group: str = "", point: str = "") -> Term:
    return _term("perplexity", encoding, tasks, at, group, point)


def normalised(encoding: str, tasks: str | Sequence[str], *at: float, group: str = "", point: str = "") -> Term:
    """The normalised score (0 = chance, 1 = perfect) of any metric."""
    return _term("normalised", encoding, tasks, at, group, point)


def diagnostic(name: str, encoding: str, tasks: str | Sequence[str], *at: float, group: str = "", point: str = ""
               ) -> Term:  # fmt: skip
    """One of the :data:`DIAGNOSTICS` of ``encoding``'s results (docs/diagnostics.md)."""
    if name not in DIAGNOSTICS:
        raise ValueError(f"diagnostic {name!r}; valid: {', '.join(DIAGNOSTICS)}")
    return _term(name, encoding, tasks, at, group, point)


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


@dataclass(frozen=True)
class Finding:
    """A published claim and its test: it holds when every check holds."""

    name: str
    title: str
    paper: str
    claim: str
    """What the paper measured and how this finding tests it, in words."""
    checks: tuple[Check, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if not self.name or not self.checks:
            raise ValueError("a finding needs a name and at least one check")

    @property
    def description(self) -> str:
        return self.title

    def terms(self) -> list[Term]:
        return [t for c in self.checks for t in c.terms()]

    def encodings(self) -> list[str]:
        return _unique([t.encoding for t in self.terms()])

    def tasks(self) -> list[str]:
        return _unique([task for t in self.terms() for task in t.tasks])

    def cases(self) -> list[tuple[str, str, float]]:
        """Every (encoding, task, multiple of the training length) the checks need, in order of appearance."""
        out = [(t.encoding, task, m) for t in self.terms() for task, m in t.cells()]
        return list(dict.fromkeys(out))

    def command(self) -> str:
        """The command that runs every case of this finding (`pebench run`, installed or not): one per protocol
        (``--extend F`` for the points ``ext{F}x``, ``--extend F --pose`` for ``pose{F}x``), joined by ``&&``."""
        points = _unique([t.point for t in self.terms()])
        out = []
        for point in points:
            terms = [t for t in self.terms() if t.point == point]
            cmd = f"pebench run --encoding {','.join(_unique([t.encoding for t in terms]))} --task " \
                f"{','.join(_unique([task for t in terms for task in t.tasks]))}"  # fmt: skip
            if point.startswith("scaffold"):
                cmd += f" --scaffold {point.removeprefix('scaffold')}"
            elif point:
                kind, factor = (point[:3], point[3:-1]) if point.startswith("ext") else (point[:4], point[4:-1])
                cmd += f" --extend {factor}" + (" --pose" if kind == "pose" else "")
            elif any(m not in QUICK_MULTIPLES for t in terms for _, m in t.cells()):
                cmd += " --tier full"
            out.append(cmd)
        return " && ".join(out)
