"""The report's *Findings* section: the verdicts of every registered finding on the shown results
(:mod:`pebench.analysis.findings`), as view dicts for the template."""

from __future__ import annotations

from typing import Any

import pandas as pd

from pebench.analysis.findings import FAILS, HOLDS, evaluate_all
from pebench.analysis.findings.claims import op_text
from pebench.analysis.findings.evaluate import missing_text
from pebench.analysis.findings.output import side_text

CSS = {HOLDS: "holds", FAILS: "fails"}


def findings_view(sel: pd.DataFrame, measured: pd.DataFrame | None = None) -> list[dict[str, Any]]:
    """One dict per finding: title, source, claim, verdict (and its CSS class), the checks with their numbers, and
    for one not run the missing cases and the command that runs them; a diagnostics run's rows ``measured`` give
    the mechanism claims the diagnostics of cells whose shown results store none."""
    out = []
    for r in evaluate_all(sel, measured):
        n = len(r.seeds)
        checks = [
            {"text": c.check.text(), "numbers": f"{side_text(c.left, n, True)} {op_text(c.check.op)} "
             f"{side_text(c.right, n, True)}", "css": "na" if c.holds is None else "holds" if c.holds else "fails",
             "mark": "–" if c.holds is None else "✓" if c.holds else "✗", "noise": c.within_noise}
            for c in r.checks
        ]  # fmt: skip
        out.append({
            "name": r.name,
            "title": r.finding.title,
            "paper": r.finding.paper,
            "claim": r.finding.claim,
            "verdict": r.verdict,
            "css": CSS.get(r.verdict, "notrun"),
            "within_noise": r.within_noise,
            "seeds": f"{n} seed{'s' if n != 1 else ''}" if n else "",
            "checks": checks,
            "missing": missing_text(r.missing),
            "command": r.command,
            "filter": " ".join([r.name, *r.finding.encodings()]),
        })  # fmt: skip
    return out
