"""Findings: published claims about positional encodings, each an inequality on scores at named multiples of the
training length, checked against one run of the results database (``pebench findings``, the report's *Findings*
section; ``docs/findings.md``).

* :mod:`~pebench.analysis.findings.claims`: the vocabulary (terms, checks, findings);
* :mod:`~pebench.analysis.findings.published`: the claims themselves, registered in :data:`FINDINGS`;
* :mod:`~pebench.analysis.findings.evaluate`: verdicts (holds / does not hold / not run) with the numbers used;
* :mod:`~pebench.analysis.findings.output`: loading a run, the terminal table and the JSON form.
"""

from __future__ import annotations

from pebench.analysis.findings.claims import Check, Finding, Term, accuracy, approx, exact_match, normalised, perplexity
from pebench.analysis.findings.evaluate import FAILS, HOLDS, NOT_RUN, FindingResult, evaluate
from pebench.analysis.findings.output import FindingsError, evaluate_all, load_run, render, run_findings, to_dict
from pebench.analysis.findings.published import FINDINGS

__all__ = [
    "FAILS", "FINDINGS", "HOLDS", "NOT_RUN", "Check", "Finding", "FindingResult", "FindingsError", "Term",
    "accuracy", "approx", "evaluate", "evaluate_all", "exact_match", "load_run", "normalised", "perplexity",
    "render", "run_findings", "to_dict",
]  # fmt: skip
