"""The page's "Across the sweep" section (a run with ``--sweep``): per task, the encodings ranked at every sweep
point side by side, and each point's Kendall tau-b with the first point's ranking (:func:`pebench.analysis.sweeps
.rankings`): does the ranking hold across the swept setting?"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pebench.analysis.sweeps import TaskRankings


@dataclass
class SweepRow:
    """One task: the points' rankings (``(encoding, colour, score text)``, best first) and tau texts."""

    task: str
    train_length: int
    points: list[str]
    rankings: list[list[tuple[str, str, str]]]
    taus: list[str]
    """Per point: ``reference`` for the first, else ``τ 0.33 ± 0.12 (3 seeds)``."""


def tau_text(tau: tuple[float, float | None, int] | None) -> str:
    """``τ 0.33 ± 0.12 (3 seeds)``, ``τ 1.00 (1 seed)``, or ``–`` when not measured."""
    if tau is None:
        return "–"
    mean, half, n = tau
    interval = f" ± {half:.2f}" if half is not None else ""
    return f"τ {mean:.2f}{interval} ({n} seed{'s' if n != 1 else ''})"


def sweep_view(tasks: Sequence[TaskRankings], colors: Mapping[str, str]) -> list[SweepRow]:
    """The section's rows (empty when no task spans two points)."""
    rows = []
    for t in tasks:
        first = t.points[0].point
        rows.append(SweepRow(
            t.task, t.train_length, [p.point for p in t.points],
            [[(e, colors.get(e, "#555555"), f"{v:.2f}") for e, v in p.order] for p in t.points],
            ["reference" if p.point == first else tau_text(t.taus.get(p.point)) for p in t.points],
        ))  # fmt: skip
    return rows
