"""The page at a field's size (issue 65): the encoding × task overview, an HTML table of coloured cells that stays
legible at 60 encodings × 50 tasks (every label at its normal size: the task headers are written vertically and,
beyond :data:`VALUES_UP_TO` tasks, the cells carry no text, only colour and a hover title), and the leaderboard's
*keeps 2× / 4×* counts (:func:`pebench.analysis.reach.keeps`)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from pebench.analysis import reach
from pebench.analysis.reach import Reach
from pebench.report.colors import cmap_hex
from pebench.report.views import Assembled, Entry, TaskView

LEVELS = 20
"""The overview's colours: the score colormap at 0, 1/20, ..., 1 (a cell's class ``q0`` .. ``q20``; ``qn``: not
run). Finer than a reader tells apart in a cell; the value itself is in the cell's hover title."""

VALUES_UP_TO = 20
"""Up to this many tasks the cells also show the score (wider columns); beyond, colour and hover title only."""


@dataclass
class OverviewCell:
    """One (encoding, task): colour class (:data:`LEVELS`), sort key (``""`` when not run), hover title and the
    score as text (``–`` when not run)."""

    level: str
    sort: str
    title: str
    text: str


@dataclass
class OverviewRow:
    """One encoding, in leaderboard order: its cells in the order of the columns."""

    encoding: str
    color: str
    rank: int
    yours: bool
    cells: list[OverviewCell]


@dataclass
class Overview:
    """The table: the columns (task key, label, anchor of the task's section), the rows, the colour bar (a CSS
    gradient) and the style rules of the colour classes."""

    columns: list[tuple[str, str, str]]
    rows: list[OverviewRow]
    gradient: str
    css: str
    values: bool
    """Whether the cells show their score (:data:`VALUES_UP_TO`)."""


def _score(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def overview(assembled: Assembled, yours: Collection[str] = ()) -> Overview:
    """Rows in leaderboard order, one column per task: colour = the normalised OOD score (mean over seeds), grey
    where the encoding has none; the hover title names the encoding, the task and the OOD and ID scores."""
    ood, idd = assembled.heat["ood"], assembled.heat["id"]
    columns = [(t.key, t.label, t.anchor) for t in assembled.tasks]
    rows = []
    for e in assembled.entries:
        cells = []
        for key, _, _ in columns:
            o, i = ood.get(e.encoding, {}).get(key), idd.get(e.encoding, {}).get(key)
            ran = o is not None or i is not None
            title = f"{e.encoding} · {key}: " + (f"OOD {_score(o)}, ID {_score(i)}" if ran else "not run")
            level = "qn" if o is None else f"q{round(min(1.0, max(0.0, o)) * LEVELS)}"
            cells.append(OverviewCell(level, "" if o is None else f"{o:.3f}", title, _score(o)))
        rows.append(OverviewRow(e.encoding, e.color, e.rank, e.encoding in yours, cells))
    colours = [cmap_hex(k / LEVELS) for k in range(LEVELS + 1)] + [cmap_hex(None)]
    css = "".join(f"#overview .q{'n' if k > LEVELS else k}{{background:{bg};color:{fg}}}"
                  for k, (bg, fg) in enumerate(colours))  # fmt: skip
    gradient = f"linear-gradient(to right, {', '.join(bg for bg, _ in colours[: LEVELS + 1 : 2])})"
    return Overview(columns, rows, gradient, css, len(columns) <= VALUES_UP_TO)


def add_keeps(entries: Sequence[Entry], tasks: Sequence[TaskView]) -> None:
    """Fill each entry's ``keeps_2x`` and ``keeps_4x`` from the how far of its task rows."""
    by_encoding: dict[str, list[Reach]] = defaultdict(list)
    for view in tasks:
        for row in view.rows:
            if row.reach is not None:
                by_encoding[row.encoding].append(row.reach)
    for e in entries:
        e.keeps_2x = reach.keeps(by_encoding[e.encoding], 2)
        e.keeps_4x = reach.keeps(by_encoding[e.encoding], 4)
