"""``pebench guard``: a few reference cells retrained (seed 0, the run's own options) and set beside the reference
within their seed noise; a result far off fails it, bad input is one line before any training."""

from __future__ import annotations

import json

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from pebench.analysis.noise import protocol_hash
from pebench.store.database import open_db
from pebench.store.schema import Result
from pebench.suite.guard import SAMPLE


def test_dry_run_plans_the_sample_from_the_shipped_reference(pebench_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = pebench_cli("guard", "--dry-run", "--", "-n", "2")
    assert res.returncode == 0, res.stdout + res.stderr
    out = res.stdout
    assert "guard plan: 3 cell(s) of sqlite:///" in out and "reference.db, 6 model(s)" in out
    for encoding, task in SAMPLE:  # each from run 2 (the default protocol), with that run's rates, seed 0 only
        assert f"  {encoding} on {task}: run 2 (cpu:" in out
        assert (f"pebench run --lr-sweep=0.001,0.003 --seeds 1 --encoding {encoding} --task {task} --no-cache "
                "--db sqlite:///guard.db -q -n 2") in out  # fmt: skip
    assert "--seeds=3" not in out and " -k " not in out and "nothing trained (--dry-run)" in out
    assert not (tmp_path / "guard.db").exists()


def test_bad_cells_are_one_line_before_any_training(pebench_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for cells, message in (("rope:no_such_task", "unknown task 'no_such_task'"),
                           ("no_such:sort", "unknown encoding 'no_such'"),
                           ("rope", "give ENCODING:TASK"),
                           ("abacus:sort", "holds no result of seed 0 of it")):  # fmt: skip
        res = pebench_cli("guard", "--cells", cells)
        lines = [line for line in res.stderr.splitlines() if line.strip()]
        assert res.returncode == 2 and len(lines) == 1 and message in lines[0], (cells, res.stderr)
        assert "guard plan" not in res.stdout
    assert not (tmp_path / "guard.db").exists()


def test_guard_retrains_a_cell_within_the_noise_and_fails_a_far_off_reference(run_suite, pebench_cli, tiny,
                                                                                tmp_path, monkeypatch):  # fmt: skip
    monkeypatch.chdir(tmp_path)
    ref = f"sqlite:///{tmp_path / 'ref.db'}"
    built = run_suite("--encoding", "rope", "--task", "k_back", *tiny, "--steps", "4", "--no-cache", "--db", ref)
    assert built.returncode == 0, built.output
    engine = open_db(ref, create=False)
    with Session(engine) as s:
        config, score = s.execute(select(Result.config, Result.score).where(Result.eval_length == 64)).one()
    engine.dispose()
    spread = tmp_path / "spread.json"  # the tiny protocol's seed spread (nothing shipped is measured at it)
    spread.write_text(json.dumps({"tasks": {"k_back": [{"sigma": 0.05, "protocol": protocol_hash(config)}]}}))
    args = ("guard", "--reference", ref, "--cells", "rope:k_back", "--spread", str(spread),
            "--db", f"sqlite:///{tmp_path / 'guard.db'}")  # fmt: skip

    same = pebench_cli(*args)  # a tiny model on one machine is deterministic: it lands where it did
    assert same.returncode == 0, same.stdout + same.stderr
    assert "--lr-sweep=off --seeds 1 --encoding rope --task k_back --no-cache" in same.stdout
    assert "rope-k_back-L64 seed 0: reference" in same.stdout and "(+0.000, noise ±0.139): within" in same.stdout
    assert "guard: 3 of 3 results within the seed noise (rope on k_back) on cpu:" in same.stdout

    engine = open_db(ref, create=False)
    with Session(engine) as s, s.begin():  # the reference's result at 64 far off what this machine computes
        s.execute(update(Result).where(Result.eval_length == 64).values(score=0.0 if score > 0.5 else 1.0))
    engine.dispose()
    off = pebench_cli(*args)
    assert off.returncode == 1, off.stdout + off.stderr
    assert "rope-k_back-L64 seed 0" in off.stdout and "beyond the seed noise" in off.stdout
    assert "guard: 2 of 3 results within the seed noise (rope on k_back)" in off.stdout
    assert off.stdout.rstrip().endswith("; 1 beyond the seed noise")

    unjudged = pebench_cli(*args[:-4], "--db", f"sqlite:///{tmp_path / 'guard.db'}")  # the shipped spread
    assert unjudged.returncode == 0 and "0 of 3 results within the seed noise" in unjudged.stdout
    assert "; 3 no measured spread" in unjudged.stdout


def test_a_retrained_seed_is_judged_against_the_reference_seeds_spread():
    from pebench.suite.guard import BEYOND, WITHIN, judge

    sigma = 0.04  # one seed each side: more than 1.96 * sqrt(2) * 0.04 = 0.111 apart is beyond
    assert judge(0.80, [0.70], sigma) == WITHIN and judge(0.82, [0.70], sigma) == BEYOND
    assert judge(0.58, [0.70], sigma) == BEYOND  # either way
    # the reference's NoPE on reverse at 9, rate 3e-3: its seeds spread far wider than the task's pooled sigma, and a
    # model retrained on another machine is another draw of them (measured: 0.848 against seed 0's 0.441)
    assert judge(0.848, [0.441, 0.422, 0.797], sigma) == WITHIN
    assert judge(0.70, [1.0, 1.0, 1.0], sigma) == BEYOND  # every seed at the ceiling: a drop shows at once
