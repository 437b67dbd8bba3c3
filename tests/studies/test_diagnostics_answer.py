"""studies/diagnostics/answer.py on the shipped reference gives the table committed beside it (answer.md), which
docs/diagnostics.md quotes: the numbers in the docs are the reference's."""

from __future__ import annotations

from pathlib import Path

from study_scripts import ROOT, load


def test_the_diagnostics_answer_is_the_shipped_references(capsys):
    answer = load("studies/diagnostics/answer.py")
    assert answer.main() == 0
    out = capsys.readouterr().out
    assert out == Path(ROOT / "studies/diagnostics/answer.md").read_text(encoding="utf-8")
    assert "- local mass: +0.59 (p 0.04, 12 encodings)" in out
    docs = (ROOT / "docs/diagnostics.md").read_text(encoding="utf-8")
    assert "(Spearman 0.59, p 0.04)" in docs
