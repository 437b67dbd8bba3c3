"""Evaluation on a grid of cells: a capability of tasks whose test sequences vary along two axes of their own.

McLeish et al., "Transformers Can Do Arithmetic with the Right Embeddings", NeurIPS 2024, arXiv:2405.17399 (Fig. 1
and the other addition heatmaps) score addition separately for every pair of operand lengths ``(len a, len b)``
(their released code, github.com/mcleish7/arithmetic ``arithmetic_eval_quicker.py``, evaluates 100 problems per pair
on a 100 x 100 grid; the paper's text on the per-pair count was not checked). A task that can do the same mixes in
:class:`GridEvaluated` and says, for each evaluation length, which cells the case at that length scores and under
which evaluation split each cell's sequences are drawn (:meth:`GridEvaluated.grid_cells`). The runner
(:func:`pebench.engine.evaluation.evaluate_grid`) evaluates each cell like a split --
:func:`pebench.engine.evaluation.evaluate` with the cell's split name, so each cell has its own seeded generator --
and stores the results with the case::

    metrics["grid"] = {"axes": [row axis, column axis], "cells": {"<row>,<col>": <evaluate's result>}}

A cell whose split is one of the task's :attr:`~pebench.tasks.base.Task.eval_splits` is not evaluated twice: it is
that split's result. The report (:mod:`pebench.report.grid`) draws the cells of every length as one heatmap per
encoding; nothing else reads them, so a task without cells (or with its grid switched off) stores nothing new.

The coordinates are positive integers in the task's length unit (digits, for addition); a cell's split name is
:func:`cell_split` of them.
"""

from __future__ import annotations

import re
from typing import ClassVar

from pebench.tasks.base import Task

_CELL = re.compile(r"^cell(\d+)x(\d+)$")


class GridEvaluated:
    """Mixin of a :class:`~pebench.tasks.base.Task` that scores cells of a two-way grid (see the module docstring)."""

    grid_axes: ClassVar[tuple[str, str]] = ("row", "column")
    """The names of the grid's row and column coordinates, e.g. ``("digits of a", "digits of b")``."""

    def grid_cells(self, length: int) -> dict[tuple[int, int], str]:
        """``(row, col) -> evaluation split`` of the cells the case at ``length`` scores; empty when the grid is off."""
        return {}


def cell_split(row: int, col: int) -> str:
    """The evaluation split name of cell ``(row, col)``: ``"cell3x5"``."""
    return f"cell{row}x{col}"


def parse_cell_split(split: str) -> tuple[int, int] | None:
    """``(row, col)`` of a :func:`cell_split` name; None for any other split."""
    m = _CELL.match(split)
    return (int(m[1]), int(m[2])) if m else None


def cell_key(row: int, col: int) -> str:
    """The key of cell ``(row, col)`` in a stored ``metrics["grid"]["cells"]``: ``"3,5"``."""
    return f"{row},{col}"


def parse_cell_key(key: str) -> tuple[int, int] | None:
    """``(row, col)`` of a stored cell key; None when ``key`` is not one."""
    parts = key.split(",")
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        return None
    return int(parts[0]), int(parts[1])


def cells_at(task: Task, length: int) -> dict[tuple[int, int], str]:
    """The cells ``task`` scores at ``length`` (:meth:`GridEvaluated.grid_cells`); empty for any other task."""
    return task.grid_cells(length) if isinstance(task, GridEvaluated) else {}


def evaluations_at(task: Task, length: int) -> int:
    """How many evaluations the case at ``length`` runs: one per evaluation split and one per grid cell whose split
    is not one of them."""
    splits = task.eval_splits
    return len(splits) + sum(1 for s in cells_at(task, length).values() if s not in splits)
