"""Results a paper can use (issue 91, item 3): ``pebench table`` writes the page's leaderboard (or a task's table) as
CSV, Markdown or LaTeX, naming the pebench version and the results' digest; the exports parse and their numbers are
the page's."""

from __future__ import annotations

import csv
import html
import io
import re
from pathlib import Path

import pytest

import pebench
from pebench.cli import main
from pebench.report.page import render_report
from pebench.report.table import build, latex_escape, to_csv, to_latex, to_markdown

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = f"sqlite:///{ROOT / 'pebench' / 'data' / 'reference.db'}"
pytestmark = pytest.mark.slow  # each builds the shipped reference's page context: about 9 s


@pytest.fixture(scope="module")
def board():
    return build(REFERENCE, "all")


def _page_rows(path: Path) -> dict[str, tuple[str, str]]:
    """The page's leaderboard: encoding -> (rank range, OOD score) as shown."""
    text = path.read_text()
    start = text.index('id="leaderboard-table"')
    text = text[start : text.index("</table>", start)]
    rows = re.findall(r'<tr data-filter="([\w-]+)"[^>]*>\s*<td class="rank"[^>]*>([^<]+)</td>\s*<td class="text".*?'
                      r'</td>\s*<td[^>]*>([^<]+)', text, flags=re.S)  # fmt: skip
    return {enc: (html.unescape(rank), score) for enc, rank, score in rows}


def test_the_csv_has_a_row_per_ranked_encoding_and_the_pages_numbers(board, tmp_path):
    rows = list(csv.DictReader(io.StringIO(to_csv(board))))
    assert len(rows) >= 44 and [int(r["rank"]) for r in rows] == list(range(1, len(rows) + 1))
    assert all(r["rank_range"] and r["pebench_version"] == pebench.__version__ and len(r["results_digest"]) == 32
               for r in rows)  # fmt: skip
    seeds = {r["encoding"]: r["seeds"] for r in rows}  # a range where an encoding's cells differ (issue 91)
    assert seeds["path"] == "1" and seeds["alibi"] == "3" and seeds["selective"] == "1-3"  # 3 where contested
    assert sum("-" in s for s in seeds.values()) >= 10
    page = _page_rows(Path(render_report(REFERENCE, tmp_path / "page.html", "all").path))
    assert len(page) == len(rows)
    for r in rows:
        assert page[r["encoding"]] == (r["rank_range"], r["ood"]), r["encoding"]


def test_markdown_and_latex_are_tables_of_the_same_rows(board):
    md = to_markdown(board).splitlines()
    assert md[0].startswith("Leaderboard of ") and "results_digest" in md[0]
    assert md[2].startswith("| rank | rank_range | tie_group | encoding |") and set(md[3]) <= set("|-")
    assert len([line for line in md if line.startswith("| ")]) == len(board.rows) + 1
    tex = to_latex(board)
    body = tex[tex.index("\\begin{tabular}") : tex.index("\\end{tabular}")]
    align = re.match(r"\\begin\{tabular\}\{([lr]+)\}", body)
    assert align is not None and len(align[1]) == len(board.columns)
    data = [line for line in body.splitlines() if line.endswith(r"\\")][1:]  # the header row first
    assert len(data) == len(board.rows) and all(line.count(" & ") == len(board.columns) - 1 for line in data)
    assert tex.startswith("% Leaderboard of ") and r"rank\_range" in tex
    assert latex_escape("a_b & 50% ± c") == r"a\_b \& 50\% $\pm$ c"


def test_a_tasks_table_and_one_line_errors(tmp_path, capsys):
    out = tmp_path / "k_back.csv"
    assert main(["table", "--db", REFERENCE, "--run", "all", "--task", "k_back", "--format", "csv", "-o",
                 str(out)]) == 0  # fmt: skip
    rows = list(csv.DictReader(out.open()))
    assert len(rows) >= 40 and {"encoding", "L64", "L128", "L256", "seeds"} <= set(rows[0])
    assert main(["table", "--db", REFERENCE, "--task", "no_such_task"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown task 'no_such_task'; valid tasks: " in err
    assert main(["table", "--db", REFERENCE, "-o", str(tmp_path / "missing" / "t.md")]) == 2


def test_the_citation_file_names_this_version():
    import yaml

    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0" and cff["version"] == pebench.__version__
    assert cff["title"].startswith("pebench") and cff["authors"] and "pebench table" in cff["message"]
