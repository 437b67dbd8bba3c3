"""The extension's results beside the from-scratch protocol (issue 88, item 3): set aside from the leaderboard of
``--run all`` into their own section (each method at L, F*L, 2F*L beside its zero-shot scores, ranked at F*L, the cost
of the fine-tune), never joined as reference results, current after a PoSE run."""

from __future__ import annotations

import pebench.results as results

TINY = ("--task", "k_back", "--steps", "6", "--d-model", "16", "--layers", "1", "--heads", "2", "--batch-size", "8",
        "--eval-samples", "8", "--lr-sweep", "off", "--no-diagnostics")  # fmt: skip


def test_both_protocols_in_one_database(run_suite, pebench_cli, tmp_path):
    db = f"sqlite:///{tmp_path / 'b.db'}"
    assert run_suite("--encoding", "rope,alibi", *TINY, "--db", db).returncode == 0
    assert run_suite("--encoding", "rope,pi,alibi", *TINY, "--extend", "2", "--db", db).returncode == 0
    assert run_suite("--encoding", "rope", *TINY, "--extend", "2", "--pose", "--db", db).returncode == 0
    page = tmp_path / "all.html"
    res = pebench_cli("report", "--db", db, "--run", "all", "-o", str(page))
    assert res.returncode == 0, res.stderr
    html = page.read_text()
    section = html[html.index('id="extension-table"'):html.index("</section>", html.index('id="extension-table"'))]
    methods = [m for m in ("alibi", "rope + PoSE", "rope", "pi") if f'class="enc">{m}<' in section]
    assert sorted(methods) == ["alibi", "pi", "rope", "rope + PoSE"]
    assert section.count("<tr data-filter=") == 4 and 'href="#extension"' in html
    board = html[html.index('id="leaderboard"'):html.index('id="extension"')]
    assert "ext2x" not in board and "pose2x" not in board  # the leaderboard ranks the from-scratch runs only
    # a PoSE run is current (its --pose is among the settings it gave), and so is the rest
    stale = pebench_cli("results", "--db", db, "--stale")
    assert "0 stale cell(s)" in stale.stdout, stale.stdout
    # as a reference, the database gives only its from-scratch results
    other = f"sqlite:///{tmp_path / 'o.db'}"
    assert run_suite("--encoding", "nope", *TINY, "--db", other).returncode == 0
    joined = pebench_cli("report", "--db", other, "--with-reference", db, "-o", str(tmp_path / "o.html"))
    assert joined.returncode == 0, joined.stderr
    reference = results.load(db)
    assert {"pi"} <= set(reference["encoding"])  # pi is in the database, at ext2x only ...
    assert 'data-filter="pi"' not in (tmp_path / "o.html").read_text()  # ... and never joined as a reference row
