"""What a score means: every metric a task may declare, registered once with its direction, tolerance and display.

A task names its metric (``metric = "exact_match"``); everything else about the score comes from here: which key of
:func:`pebench.engine.evaluation.evaluate`'s result holds it, whether higher is better, whether a regression tolerance
is absolute or relative, how it is displayed, and how it is normalised against chance. The report, ``pebench compare``,
the suite's baseline, ``pebench bench`` verdicts and the synthetic database all ask this registry (as
lm-evaluation-harness registers a metric with its direction and aggregation).

Normalised score (0 = chance, 1 = perfect, clipped to [0, 1]):

* higher-is-better metrics in [0, 1] (accuracy, exact match): ``(s - c) / (1 - c)`` with ``c`` the chance level;
* perplexity: ``1 - ln(ppl) / ln(C)``, ``C`` the perplexity of the uniform predictor (the task's chance level, or
  the vocabulary size when no chance level above 1 is known): the fraction of the uniform predictor's
  cross-entropy the model removes.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from pebench.errors import ConfigError
from pebench.registry import Registry


def _finite(v: Any) -> bool:
    try:
        return v is not None and not isinstance(v, bool) and math.isfinite(float(v))
    except (TypeError, ValueError):
        return False


@dataclass(frozen=True)
class Metric:
    """One metric: ``key`` in an evaluation result, direction, tolerance kind (``absolute``: a drop in the metric's
    own units; ``relative``: a fraction of the base value), and display (``percent``: shown x100; ``digits``)."""

    name: str
    key: str
    higher_is_better: bool = True
    tolerance: str = "absolute"
    percent: bool = True
    digits: int = 1
    description: str = ""

    @property
    def label(self) -> str:
        """The metric's name as shown to people (``exact match``)."""
        return self.name.replace("_", " ")

    @property
    def unit(self) -> str:
        """Column unit on the page: ``exact match %`` or ``perplexity``."""
        return f"{self.label} %" if self.percent else self.name

    @property
    def relative(self) -> bool:
        return self.tolerance == "relative"

    def display(self, value: float | None) -> float | None:
        """``value`` in display units (x100 for percentages)."""
        if value is None:
            return None
        return 100.0 * value if self.percent else value

    def gain(self, base: float, current: float) -> float:
        """How much better ``current`` is than ``base`` in the metric's units (negative: worse)."""
        return current - base if self.higher_is_better else base - current

    def chance_score(self, chance: float | None, vocab_size: int | None = None) -> float | None:
        """The score of a predictor at chance in the metric's units: the task's chance level (0 when unknown) for a
        higher-is-better metric; for perplexity the uniform predictor's, the chance level when above 1, else the
        vocabulary size (None when neither is known)."""
        if self.higher_is_better:
            return float(chance) if _finite(chance) else 0.0  # type: ignore[arg-type]
        if _finite(chance) and float(chance) > 1.0:  # type: ignore[arg-type]
            return float(chance)  # type: ignore[arg-type]
        return float(vocab_size) if _finite(vocab_size) and float(vocab_size) > 1.0 else None  # type: ignore[arg-type]

    def normalise(self, score: float | None, chance: float | None, vocab_size: int | None = None) -> float | None:
        """``score`` on [0, 1], 0 = chance and 1 = perfect (see the module docstring; chance is
        :meth:`chance_score`); None when undefined."""
        c = self.chance_score(chance, vocab_size)
        if not _finite(score) or c is None:
            return None
        score = float(score)  # type: ignore[arg-type]
        if self.higher_is_better:
            if c >= 1.0:
                return None
            value = (score - c) / (1.0 - c)
        else:
            if score <= 0.0:
                return None
            value = 1.0 - math.log(score) / math.log(c)
        return min(1.0, max(0.0, value))


@dataclass(frozen=True)
class Tolerances:
    """Tolerated changes: ``accuracy`` for metrics with an absolute tolerance (accuracy, exact match), ``perplexity``
    for those with a relative one, ``speed`` a relative drop of training tokens/s."""

    accuracy: float = 0.02
    perplexity: float = 0.05
    speed: float = 0.15

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if not (value >= 0 and math.isfinite(value)):
                raise ConfigError("tolerance", f"{{{name}}} must be a non-negative number, got {value}")

    def describe(self, metric: Metric) -> str:
        """The tolerance of ``metric`` as text: ``0.02`` or ``5% relative``."""
        return f"{self.perplexity:.0%} relative" if metric.relative else f"{self.accuracy:g}"


METRICS: Registry[Metric] = Registry("metric")


register = METRICS.register


register(Metric("accuracy", "token_accuracy", description="accuracy over scored tokens"))
register(Metric("exact_match", "sequence_accuracy",
                description="fraction of sequences whose scored tokens are all correct (teacher-forced, which "
                "equals greedy decoding's exact match)"))  # fmt: skip
register(Metric("perplexity", "perplexity", higher_is_better=False, tolerance="relative", percent=False, digits=2,
                description="exp(mean loss over scored tokens)"))  # fmt: skip


def get(name: str) -> Metric:
    """The registered metric ``name``; an unknown name raises an error listing the valid ones."""
    return METRICS.get(name)


def available() -> list[str]:
    return METRICS.names()


def of_result(name: Any, higher_is_better: Any = True) -> Metric:
    """The metric of a stored result: the registered one, or for a name this version does not know (a database
    written by another version) a metric with the stored direction, shown like accuracy or like perplexity."""
    if isinstance(name, str) and name in METRICS:
        return METRICS.get(name)
    hib = bool(higher_is_better)
    label = str(name) if name else ("accuracy" if hib else "perplexity")
    if label in METRICS:
        return METRICS.get(label)
    return Metric(label, label, hib, "absolute", percent=hib, digits=1 if hib else 2)
