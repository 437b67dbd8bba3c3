"""Rendering: the Jinja2 templates in ``pebench/report/templates/`` (autoescape on: every string from the database is
text, never markup) turned into one self-contained HTML file, written atomically."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pebench.report.data import ReportError, build_context


@dataclass
class RenderInfo:
    """What :func:`render_report` wrote."""

    path: Path
    size_bytes: int
    seconds: float
    n_results: int
    runs: list[int]
    standing: list[str] = field(default_factory=list)
    n_stored: int = 0
    """The results stored for the page's runs (more than ``n_results`` where each cell shows its chosen rate)."""
    """With a reference: where the run's encodings stand among its encodings (:mod:`pebench.report.standing`)."""


def _environment() -> Any:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(Path(__file__).with_name("templates"))),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env


def render_html(context: Mapping[str, Any]) -> str:
    """The page for ``context`` (see :func:`build_context`)."""
    return _environment().get_template("leaderboard.html").render(**context)


def render_report(db_url: str, output: str | os.PathLike[str], run: int | str | None = "latest",
                  point: str | None = None, reference: str | None = None, allow_stale: bool = False,
                  curves: str | None = None) -> RenderInfo:  # fmt: skip
    """Render the leaderboard of ``run`` (an id, ``latest``, ``previous`` or ``all``; with a sweep, of its ``point``)
    in ``db_url`` to ``output``; with ``reference`` (a database URL), beside the comparable reference results of the
    encodings it does not have (:mod:`pebench.analysis.reference`; joined results trained by other code than the
    run's are refused unless ``allow_stale``); ``curves``: the encodings whose learning curves are drawn besides the
    leaders' (comma-separated, or ``all``).

    The file is written to a temporary name beside ``output`` and renamed, so a failure never leaves half a page.
    """
    start = time.perf_counter()
    out = Path(output).expanduser()
    if out.is_dir():
        raise ReportError(f"-o {str(output)!r} is a directory; give a file name such as leaderboard.html")
    if not out.parent.resolve().is_dir():
        raise ReportError(f"-o {str(output)!r}: directory {out.parent.resolve()} does not exist")
    context = build_context(db_url, run, point, reference, allow_stale, curves)
    html = render_html(context)
    tmp = out.with_name(f".{out.name}.tmp{os.getpid()}")
    tmp.write_text(html, encoding="utf-8")
    os.replace(tmp, out)
    runs = [r["id"] for r in context["header"]["runs"]]
    return RenderInfo(out, out.stat().st_size, time.perf_counter() - start, context["header"]["n_cases"], runs,
                      context["standing"], context["header"].get("n_stored", context["header"]["n_cases"]))  # fmt: skip
