"""``pebench rebuild``: only the stale cells of a reference are retrained, with the run's own options, and put in
place of the old ones; the others stay as they were."""

from __future__ import annotations

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from pebench.store.database import open_db
from pebench.store.schema import Fingerprint, Result
from pebench.suite.rebuild import run_flags


def test_run_flags_reproduce_the_stored_options_that_are_not_defaults():
    options = {"seeds": 3, "lr_sweep": "0.001,0.003", "tier": "quick", "reuse": True, "encoding": "rope",
               "sweep": ["layers=1,2"], "lr_halving": False, "keyword": "L64", "d_model": 128,
               "steps": None}  # fmt: skip
    assert run_flags(options) == ["--seeds=3", "--sweep", "layers=1,2", "--lr-sweep=0.001,0.003", "-k", "L64"]
    assert run_flags({"lr_sweep": None}) == ["--lr-sweep=off"]  # stored None: the run trained one rate
    # a setting the run did not give (stored at the default of then) is rebuilt at today's default
    stored = {"lr_sweep": None, "lr": 0.002, "steps": 40, "given": ["steps"]}
    assert run_flags(stored) == ["--steps=40", "--lr-sweep=off"]
    assert "--lr=0.002" in run_flags({"lr_sweep": None, "lr": 0.002})  # nothing tells what it gave: every value


def test_rebuild_retrains_exactly_the_stale_cells_and_merges_them_in(run_suite, pebench_cli, tiny, tmp_path,
                                                                     monkeypatch):  # fmt: skip
    pebench = pebench_cli  # its commands in this process, from tmp_path (rebuild's suite session is a process)
    monkeypatch.chdir(tmp_path)
    url = f"sqlite:///{tmp_path / 'ref.db'}"
    built = run_suite("--encoding", "rope,alibi", "--task", "k_back", "-k", "L64", *tiny, "--steps", "4",
                      "--no-cache", "--db", url)  # fmt: skip
    assert built.returncode == 0, built.output
    engine = open_db(url, create=False)
    with Session(engine) as s, s.begin():  # alibi's results as if another computation had made them
        row = s.get(Fingerprint, s.scalar(select(Result.encoding_fingerprint).where(Result.encoding == "alibi")))
        values = dict(row.values) | {"weights": [row.values["weights"][0] * (1 + 1e-6)]}
        s.add(Fingerprint(digest="other", kind="encoding", name="alibi", options=row.options, values=values))
        s.execute(update(Result).where(Result.encoding == "alibi").values(encoding_fingerprint="other"))
        before = {e: sorted(s.scalars(select(Result.id).where(Result.encoding == e))) for e in ("rope", "alibi")}
    engine.dispose()
    stale = pebench("results", "--stale", "--db", url)
    assert "alibi on k_back: computes otherwise" in stale.stdout and "rope on" not in stale.stdout
    dry = pebench("rebuild", "--db", url, "--dry-run")
    assert "1 stale cell(s) in 1 group(s)" in dry.stdout and "run 1: alibi on k_back (1 model(s), " in dry.stdout
    assert "to train: about 1 model(s), 0.0 CPU-minutes of stored training time" in dry.stdout  # what it stored
    early = pebench("rebuild", "--db", url, "--merge")
    assert early.returncode == 2 and "not complete yet (run1-alibi.db)" in early.stderr
    trained = pebench("rebuild", "--db", url, "--", "--no-cache")
    assert trained.returncode == 0, trained.stdout + trained.stderr
    assert (tmp_path / "rebuild-parts" / "run1-alibi.db").is_file()
    again = pebench("rebuild", "--db", url)  # resumable: a complete group is not trained again
    assert "done already" in again.stdout
    merged = pebench("rebuild", "--db", url, "--merge")
    assert merged.returncode == 0 and "merged 1 result(s)" in merged.stdout, merged.stdout + merged.stderr
    assert "0 stale cell(s) of 2" in pebench("results", "--stale", "--db", url).stdout
    engine = open_db(url, create=False)
    with Session(engine) as s:
        after = {e: sorted(s.scalars(select(Result.id).where(Result.encoding == e))) for e in ("rope", "alibi")}
        assert s.scalars(select(Result.encoding_fingerprint).where(Result.encoding == "alibi")).all() != ["other"]
        assert s.scalars(select(Result.run_id).distinct()).all() == [1]  # in place, in the run that held them
    engine.dispose()
    assert after["rope"] == before["rope"] and len(after["alibi"]) == len(before["alibi"]) == 1
