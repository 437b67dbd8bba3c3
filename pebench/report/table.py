"""``pebench table``: the leaderboard, or one task's table by length, as CSV, Markdown or LaTeX -- for a paper.

The numbers are the page's: the table is read from the same template context (:func:`pebench.report.data.
build_context`), so the leaderboard's rank, rank range (95%, from the bootstrap over tasks and seed noise), tie group
and the OOD and ID scores with their 95% intervals (the task-first aggregate of normalised scores: 0 chance, 1
perfect) are exactly what the page shows. A task's table (``--task T``) gives each encoding's score at each evaluated
length in the task's own metric, mean over seeds with the interval of its own seeds where it has several.

Every export names what it was made from: the pebench version and the digest of the results it read
(:func:`pebench.analysis.lite.inputs_digest`: encoding, task, seed, lengths, status, score, run and case of every
result), as two columns of each CSV row and a comment (Markdown, LaTeX) above the table.
"""

from __future__ import annotations

import argparse
import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pebench.errors import PebenchError

FORMATS = ("csv", "markdown", "latex")
LEADERBOARD_COLUMNS = ["rank", "rank_range", "tie_group", "encoding", "ood", "ood_ci95", "id", "id_ci95", "tasks",
                       "seeds"]  # fmt: skip


@dataclass
class Table:
    """One exported table: its caption, its columns and its rows (text), and what it was made from."""

    caption: str
    columns: list[str]
    rows: list[list[str]]
    provenance: dict[str, str] = field(default_factory=dict)


def _num(value: float | None, digits: int = 3) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def leaderboard(context: dict[str, Any]) -> list[list[str]]:
    """The page's leaderboard rows (:data:`LEADERBOARD_COLUMNS`), in its order."""
    rows = []
    for e in context.get("entries", []):
        group = e.group if e.group is not None else ""
        rows.append([str(e.rank), e.rank_text, str(group), e.encoding, _num(e.ood.value), _num(e.ood.half),
                     _num(e.id.value), _num(e.id.half), f"{e.n_tasks}/{e.total_tasks}", e.seeds_text])  # fmt: skip
    return rows


def task_table(context: dict[str, Any], task: str) -> tuple[list[str], list[list[str]], str]:
    """Columns, rows and the caption's words of task ``task``'s table on the page (each length's score, mean over
    seeds, ``± half`` where its seeds give an interval)."""
    views = [v for v in context.get("tasks", []) if v.name == task]
    if not views:
        shown = sorted({v.name for v in context.get("tasks", [])})
        raise PebenchError(f"--task {task!r} is not in this run; its tasks: {', '.join(shown) or 'none'}")
    view = views[0]
    columns = ["encoding", *[f"L{n}" for n in view.lengths], "seeds"]
    rows = []
    for r in view.rows:
        cells = [f"{c.text} {c.half_text}".strip() if c.value is not None else "" for c in r.cells]
        rows.append([r.encoding, *cells, str(r.n_seeds)])
    unit = f" in {view.unit}" if view.unit else ""
    what = f"{view.label}: {view.metric}{unit} ({'higher' if view.higher_is_better else 'lower'} is better), " \
           f"trained at {view.train_length}, mean over seeds at each evaluated length"  # fmt: skip
    return columns, rows, what


def build(db_url: str, run: str, task: str | None = None) -> Table:
    """The table of ``db_url``'s run ``run`` (the leaderboard, or ``task``'s table)."""
    import pebench
    from pebench.analysis.lite import inputs_digest
    from pebench.report.data import load, page_context

    data = load(db_url, run)  # one read: the page's rows and every result for the digest
    context = page_context(data)
    if not context.get("entries"):
        raise PebenchError(f"--db {data.db_url}: run {run} holds no results to tabulate")
    digest = inputs_digest(data.df)
    provenance = {"pebench_version": pebench.__version__, "results_digest": digest}
    where = f"{data.db_url}, run {run}"
    if task is None:
        caption = (f"Leaderboard of {where}: rank, 95% rank range and tie group (encodings tied within the noise), "
                   "OOD and ID scores (normalised: 0 chance, 1 perfect; mean over tasks) with their 95% intervals")
        return Table(caption, list(LEADERBOARD_COLUMNS), leaderboard(context), provenance)
    columns, rows, what = task_table(context, task)
    return Table(f"{what}; {where}", columns, rows, provenance)


def to_csv(table: Table) -> str:
    """CSV with a header row; each row also names the pebench version and the results' digest."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*table.columns, *table.provenance])
    for row in table.rows:
        writer.writerow([*row, *table.provenance.values()])
    return out.getvalue()


def _made_from(table: Table) -> str:
    return ", ".join(f"{k} {v}" for k, v in table.provenance.items())


def to_markdown(table: Table) -> str:
    """A pipe table under its caption and what it was made from."""
    lines = [f"{table.caption} ({_made_from(table)}).", "", "| " + " | ".join(table.columns) + " |",
             "|" + "|".join("---" for _ in table.columns) + "|"]  # fmt: skip
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in table.rows]
    return "\n".join(lines) + "\n"


_LATEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
          "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "±": r"$\pm$"}  # fmt: skip


def latex_escape(text: str) -> str:
    """``text`` with LaTeX's special characters escaped."""
    return "".join(_LATEX.get(ch, ch) for ch in text)


def to_latex(table: Table) -> str:
    """A ``tabular`` (names left, numbers right) with comment lines naming its caption and provenance."""
    align = "".join("l" if c in ("encoding", "rank_range") else "r" for c in table.columns)
    lines = [f"% {table.caption}", f"% {_made_from(table)}", f"\\begin{{tabular}}{{{align}}}", "\\hline",
             " & ".join(latex_escape(c) for c in table.columns) + r" \\", "\\hline"]  # fmt: skip
    lines += [" & ".join(latex_escape(cell) for cell in row) + r" \\" for row in table.rows]
    lines += ["\\hline", "\\end{tabular}"]
    return "\n".join(lines) + "\n"


WRITERS = {"csv": to_csv, "markdown": to_markdown, "latex": to_latex}


def command(args: argparse.Namespace, db_url: str) -> int:
    """``pebench table``: write the table of the database at ``db_url`` (``-o``, else standard output; the CLI has
    checked that ``-o`` can be written, before any work)."""
    from pebench.tasks import registry

    tasks: Sequence[str | None] = [t.strip() for t in args.task.split(",") if t.strip()] if args.task else [None]
    for name in tasks:  # an unknown task is one line naming the valid ones, before the run is read
        if name is not None:
            registry.get(name)
    text = "\n".join(WRITERS[args.format](build(db_url, args.run, t)) for t in tasks)
    if args.output is None:
        print(text, end="")
    else:
        Path(args.output).write_text(text)
        print(f"wrote {args.output} ({args.format}, {len(text.splitlines())} lines)")
    return 0
