"""A diagnostics run of its own (issue 89, item 4): ``pebench run --diagnostics-run`` retrains cells ranked in other
runs to measure their diagnostics; with ``--run all`` its results are set aside (never ranked, never superseding the
ranked cells, never joined as a reference), and the Why section and the mechanism findings read them where the
ranked results store none."""

from __future__ import annotations

import pebench.results as results

TINY = ("--task", "k_back", "--steps", "6", "--d-model", "16", "--layers", "1", "--heads", "2", "--batch-size", "8",
        "--eval-samples", "8", "--lr-sweep", "off")  # fmt: skip


def _section(html: str, marker: str) -> str:
    return html[html.index(marker):html.index("</section>", html.index(marker))]


def test_a_diagnostics_run_is_read_by_the_why_section_and_never_ranked(run_suite, pebench_cli, tmp_path):
    db = f"sqlite:///{tmp_path / 'r.db'}"
    assert run_suite("--encoding", "rope,alibi", *TINY, "--no-diagnostics", "--db", db).returncode == 0
    # alibi retrained at another rate (other scores), and nope, ranked nowhere, with the diagnostics
    assert run_suite("--encoding", "alibi,nope", *TINY, "--lr", "0.01", "--diagnostics-run", "--db", db,
                     "--layers", "1").returncode == 0  # fmt: skip
    df = results.load(db)
    alibi = df[df["encoding"] == "alibi"]
    assert list(alibi[alibi["run_id"] == 1]["score"]) != list(alibi[alibi["run_id"] == 2]["score"])
    page = tmp_path / "all.html"
    res = pebench_cli("report", "--db", db, "--run", "all", "-o", str(page))
    assert res.returncode == 0, res.stderr
    assert "6 results of run(s) 1)" in res.stdout  # the ranked run's alibi, not superseded by the later run 2
    html = page.read_text()
    why = _section(html, 'id="why-table"')
    assert 'data-filter="alibi"' in why and 'data-filter="rope"' not in why  # rope: no diagnostics anywhere
    assert 'data-filter="nope"' not in why  # the section lists the ranked encodings: nope's cell is ranked nowhere
    assert "from the diagnostics run 2" in html
    board = _section(html, 'id="leaderboard"')
    assert 'data-filter="alibi"' in board and 'data-filter="nope"' not in board
    table = pebench_cli("table", "--db", db, "--run", "all", "--format", "csv")
    assert table.returncode == 0, table.stderr
    assert sorted(line.split(",")[3] for line in table.stdout.splitlines()[1:]) == ["alibi", "rope"]
    findings = pebench_cli("findings", "--db", db, "--run", "all")
    assert findings.returncode == 0, findings.stderr
    assert "(the mechanism claims read the diagnostics of run(s) 2, a diagnostics run," in findings.stdout
    assert "diagnostics run" not in pebench_cli("findings", "--db", db, "--run", "1").stdout
    stale = pebench_cli("results", "--db", db, "--stale")
    assert "0 stale cell(s)" in stale.stdout, stale.stdout
    # as a reference, the database gives its ranked cells only
    mine, joined_page = f"sqlite:///{tmp_path / 'mine.db'}", tmp_path / "mine.html"
    assert run_suite("--encoding", "learned", *TINY, "--db", mine).returncode == 0
    joined = pebench_cli("report", "--db", mine, "--with-reference", db, "-o", str(joined_page))
    assert joined.returncode == 0, joined.stderr
    board = _section(joined_page.read_text(), 'id="leaderboard"')
    assert 'data-filter="rope"' in board and 'data-filter="nope"' not in board


def test_a_diagnostics_run_without_its_diagnostics_is_refused_in_one_line(run_suite, tmp_path):
    db = f"sqlite:///{tmp_path / 'r.db'}"
    res = run_suite("--encoding", "alibi", *TINY, "--diagnostics-run", "--no-diagnostics", "--db", db)
    assert res.returncode != 0 and "Traceback" not in res.output
    assert "--diagnostics-run measures the diagnostics of from-scratch cells: run it without --no-diagnostics" \
        in res.output  # fmt: skip
