"""The page's grid heatmaps: for a task whose results hold grid cells (``metrics["grid"]``, :mod:`pebench.tasks.grid`;
addition with ``grid=true``: McLeish et al.'s ``(len a, len b)`` operand-length grid, arXiv:2405.17399, Fig. 1), one
heatmap per encoding of the task's metric in every cell, the mean over seeds of the cells that every evaluated length
stored. Rows are the first axis (top to bottom), columns the second, as in McLeish et al.'s plots; the cells with
both coordinates at most the training length (the training square, for addition) are outlined; a cell no result
holds is grey. Colour is the normalised score of the shown mean (:meth:`pebench.metrics.Metric.normalise`), as in the
split grids. A task without grid cells in its results gets nothing (:func:`cell_grids` is empty)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup, escape

from pebench.analysis.scoring import Group, finite
from pebench.report.colors import cmap_hex
from pebench.report.svg import FONT
from pebench.report.textwidth import text_width
from pebench.report.views import TaskView
from pebench.status import ResultStatus
from pebench.tasks.grid import parse_cell_key

TRAIN_OUTLINE = "#d62728"


@dataclass
class CellGrid:
    """One encoding's heatmap: ``values[(row, col)]`` is the mean over seeds in display units (None: no value)."""

    encoding: str
    color: str
    axes: tuple[str, str]
    values: dict[tuple[int, int], float | None]
    seeds: dict[tuple[int, int], int]
    svg: str = ""


Cells = dict[tuple[int, int], list[float]]


def grid_values(rows: list[Mapping[str, Any]], key: str) -> tuple[tuple[str, str] | None, Cells]:
    """The stored cells of the results ``rows`` (ok results only): their axes and, per cell, the ``key`` values (one
    per result holding the cell)."""
    axes: tuple[str, str] | None = None
    values: Cells = defaultdict(list)
    for r in rows:
        grid = (r.get("metrics") or {}).get("grid") if r.get("status") == ResultStatus.OK else None
        if not isinstance(grid, Mapping):
            continue
        if axes is None and len(grid.get("axes") or ()) == 2:
            axes = (str(grid["axes"][0]), str(grid["axes"][1]))
        for name, result in (grid.get("cells") or {}).items():
            cell = parse_cell_key(str(name))
            value = result.get(key) if isinstance(result, Mapping) else None
            if cell is not None and finite(value):
                values[cell].append(float(value))
    return axes, dict(values)


def cell_grids(view: TaskView, enc_groups: Mapping[str, Group]) -> list[CellGrid]:
    """The heatmaps of one task, an encoding per row of its table (in the table's order); empty without cells."""
    m = view.metric_def
    if m is None:
        return []
    out = []
    for row in view.rows:
        axes, values = grid_values(list(enc_groups[row.encoding].rows()), m.key)
        if not values:
            continue
        means = {c: m.display(sum(v) / len(v)) for c, v in values.items()}
        grid = CellGrid(row.encoding, row.color, axes or ("row", "column"), means,
                        {c: len(v) for c, v in values.items()})  # fmt: skip
        norm = {c: m.normalise(sum(v) / len(v), view.chance) for c, v in values.items()}
        grid.svg = Markup(heatmap_svg(grid, norm, view.train_length, m.digits, m.unit))
        out.append(grid)
    return out


def _ticks(n: int) -> list[int]:
    step = 1 if n <= 16 else 5 if n <= 60 else 10
    return sorted({1, *range(step, n + 1, step)})


def heatmap_svg(grid: CellGrid, norm: Mapping[tuple[int, int], float | None], train: int, digits: int,
                unit: str) -> str:  # fmt: skip
    """The SVG of one encoding's grid: ``norm`` colours the cells, ``grid.values`` is written in them (when they are
    large enough) and in each cell's hover text; the cells within ``train`` x ``train`` are outlined."""
    n_rows = max(r for r, _ in grid.values)
    n_cols = max(c for _, c in grid.values)
    size = 22.0 if max(n_rows, n_cols) <= 16 else max(5.0, 352.0 / max(n_rows, n_cols))
    label_a, label_b = text_width(grid.axes[0], 11) + 6, text_width(grid.axes[1], 11) + 6
    gap = 1.0 if size >= 10 else 0.0  # white lines between cells, where they leave room for the colour
    left, top = 46.0, max(6.0, (label_a - n_rows * size) / 2)  # the rotated row label fits beside the rows
    body = []
    for r in range(1, n_rows + 1):
        for c in range(1, n_cols + 1):
            value = grid.values.get((r, c))
            fill, fg = cmap_hex(norm.get((r, c)) if value is not None else None)
            x, y = left + (c - 1) * size, top + (r - 1) * size
            shown = "–" if value is None else f"{value:.{digits}f}"
            seeds = grid.seeds.get((r, c), 0)
            tip = f"{grid.axes[0]} {r}, {grid.axes[1]} {c}: {shown}" + (f" ({seeds} seeds)" if seeds > 1 else "")
            body.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{size - gap:.1f}" height="{size - gap:.1f}" '
                        f'fill="{fill}"><title>{escape(tip)}</title></rect>')  # fmt: skip
            if value is not None and size >= 18:
                body.append(f'<text x="{x + size / 2 - 0.5:.1f}" y="{y + size / 2 + 3:.1f}" text-anchor="middle" '
                            f'font-size="9" fill="{fg}">{value:.0f}</text>')  # fmt: skip
    if train >= 1:
        w, h = min(train, n_cols) * size, min(train, n_rows) * size
        body.append(f'<rect x="{left - 0.5:.1f}" y="{top - 0.5:.1f}" width="{w:.1f}" height="{h:.1f}" fill="none" '
                    f'stroke="{TRAIN_OUTLINE}" stroke-width="1.5"><title>training square</title></rect>')  # fmt: skip
    bottom = top + n_rows * size
    for r in _ticks(n_rows):
        body.append(f'<text x="{left - 4:.1f}" y="{top + (r - 0.5) * size + 3.5:.1f}" text-anchor="end" '
                    f'font-size="10">{r}</text>')  # fmt: skip
    for c in _ticks(n_cols):
        body.append(f'<text x="{left + (c - 0.5) * size:.1f}" y="{bottom + 12:.1f}" text-anchor="middle" '
                    f'font-size="10">{c}</text>')  # fmt: skip
    width = max(left + n_cols * size + 8, left + n_cols * size / 2 + label_b / 2)
    height = max(bottom + 34, top + n_rows * size / 2 + label_a / 2)
    body.append(f'<text x="{left + n_cols * size / 2:.1f}" y="{bottom + 27:.1f}" text-anchor="middle" '
                f'font-size="11">{escape(grid.axes[1])}</text>')  # fmt: skip
    body.append(f'<text transform="translate(12,{top + n_rows * size / 2:.1f}) rotate(-90)" text-anchor="middle" '
                f'font-size="11">{escape(grid.axes[0])}</text>')  # fmt: skip
    label = f"{grid.encoding}: {unit} per {grid.axes[0]} and {grid.axes[1]}"
    return (f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{escape(label)}" '
            f'viewBox="0 0 {width:.1f} {height:.1f}" width="{width:.1f}" height="{height:.1f}" '
            f'font-family="{FONT}" font-size="11" fill="#1d2330" class="cellgrid">'
            + "".join(body) + "</svg>")  # fmt: skip
