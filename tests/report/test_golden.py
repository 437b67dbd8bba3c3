"""The report and ``pebench compare`` on a fixed database (``tests/data/fixed.db``) against golden files: the same
database renders the same page (apart from the render time and the database path) and compare prints the same
verdicts. Regenerate the golden files with ``PEBENCH_BLESS=1 pytest tests -k golden`` after an intended change."""

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from pebench.cli import main as cli_main
from pebench.report import render_report

DATA = Path(__file__).resolve().parent / "data"
GOLDEN = DATA / "golden"
BLESS = os.environ.get("PEBENCH_BLESS") == "1"


@pytest.fixture
def fixed_url(tmp_path):
    shutil.copy(DATA / "fixed.db", tmp_path / "fixed.db")
    return f"sqlite:///{tmp_path / 'fixed.db'}"


def _check(name: str, text: str) -> None:
    path = GOLDEN / name
    if BLESS:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    expected = path.read_text(encoding="utf-8")
    if text != expected:  # the first differing line, not a 300 kB diff
        for i, (a, b) in enumerate(zip(text.splitlines(), expected.splitlines(), strict=False)):
            assert a == b, f"{name}, line {i + 1} differs"
        assert text == expected, f"{name}: different number of lines"


def _rounded(obj):
    """Floats to 12 significant digits: the last bits of a bootstrap bound move with numpy's version (seen between
    numpy releases on the same data), and a golden file checks verdicts and figures, not float rounding."""
    if isinstance(obj, float):
        return float(f"{obj:.12g}")
    if isinstance(obj, dict):
        return {k: _rounded(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_rounded(v) for v in obj]
    return obj


def _stable(html: str) -> str:
    return re.sub(r"rendered [^<]* from <code>[^<]*</code>", "rendered TIME from <code>DB</code>", html)


@pytest.mark.parametrize("run", ["3", "4", "all"])
def test_report_of_the_fixed_database(fixed_url, tmp_path, run):
    out = tmp_path / "page.html"
    render_report(fixed_url, out, run)
    _check(f"report-run-{run}.html", _stable(out.read_text(encoding="utf-8")))


@pytest.mark.parametrize(("base", "current"), [("1", "2"), ("2", "3"), ("3", "4")])
def test_compare_on_the_fixed_database(fixed_url, capsys, base, current):
    status = cli_main(["compare", base, current, "--db", fixed_url])
    text = capsys.readouterr().out
    status_json = cli_main(["compare", base, current, "--db", fixed_url, "--json"])
    data = json.loads(capsys.readouterr().out)
    assert status == status_json
    _check(f"compare-{base}-{current}.txt", f"exit {status}\n{text}")
    _check(f"compare-{base}-{current}.json", json.dumps(_rounded(data), indent=1, sort_keys=True) + "\n")


def test_split_grids_show_the_tasks_own_metric(fixed_url):
    """passkey is scored by exact match: its depth x length grid shows mean sequence accuracy per split (in %), not
    token accuracy, coloured against the exact-match chance level."""
    from pebench.report import build_context
    from pebench.store.load import load

    view = next(t for t in build_context(fixed_url, "3")["tasks"] if t.name == "passkey")
    assert view.unit == "exact match %" and view.splits == ["uniform", "depth0.00", "depth0.50", "depth1.00"]
    df = load(fixed_url, 3)
    rows = df[(df.encoding == "rope") & (df.task == "passkey") & (df.eval_length == 128) & (df.status == "ok")]
    expected = 100 * sum(m["splits"]["depth0.50"]["sequence_accuracy"] for m in rows.metrics) / len(rows)
    token = 100 * sum(m["splits"]["depth0.50"]["token_accuracy"] for m in rows.metrics) / len(rows)
    grid = next(g for g in view.split_grids if g["encoding"] == "rope")
    cell = grid["rows"][2]["cells"][view.lengths.index(128)]
    assert cell["text"] == f"{expected:.1f}" != f"{token:.1f}"
