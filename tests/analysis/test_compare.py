"""Regression verdicts: ``pebench compare`` on hand-made runs (numbers written out), and the suite's baseline check
-- on SQLite and PostgreSQL (the ``db_url`` fixture)."""

import hashlib
import json

import pytest

from pebench import store as db
from pebench.analysis.baseline import Baseline, Regression
from pebench.analysis.compare import CompareError, Tolerances, compare_runs, verdict
from pebench.analysis.stats import Estimate
from pebench.cli import main
from pebench.records.record import ResultRecord
from pebench.store.load import load

RUN = {"package_version": "0", "torch_version": "t", "python_version": "3", "device": "cpu:x", "host": "h"}
CONFIG = {"train": {"steps": 100}, "model": {"d_model": 16}}


def chash(cfg: dict) -> str:
    return hashlib.md5(json.dumps(cfg, sort_keys=True).encode()).hexdigest()


def record(enc="rope", task="k_back", length=64, seed=0, score=0.5, tps=1000.0, config=None, status="ok", **kw):
    cfg = config or CONFIG
    rec = {
        "case_id": f"{enc}-{task}-L{length}",
        "encoding": enc,
        "encoding_version": "1",
        "task": task,
        "task_version": "1",
        "train_length": 64,
        "eval_length": length,
        "seed": seed,
        "config": cfg,
        "config_hash": chash(cfg),
        "code_version": "c0",
        "status": status,
        "metric": "accuracy",
        "higher_is_better": True,
        "score": score if status == "ok" else None,
        "tokens_per_s": tps,
    }
    rec.update(kw)
    return rec


def make_db(url, *runs):
    """Each run: a list of records, written to the new database at ``url``. Returns (url, run ids)."""
    engine = db.open_db(url)
    ids = []
    for records in runs:
        run_id = db.start_run(engine, RUN)
        for rec in records:
            db.add_result(engine, run_id, rec)
        db.finish_run(engine, run_id, "finished")
        ids.append(run_id)
    engine.dispose()
    return url, ids


def test_verdict_rules():
    one = lambda m: Estimate(m, m, m, 1)  # noqa: E731
    # single seeds: only the tolerance counts
    assert verdict(one(0.80), one(0.75), 0.02, True) == "regressed"
    assert verdict(one(0.80), one(0.79), 0.02, True) == "same"
    assert verdict(one(0.80), one(0.85), 0.02, True) == "improved"
    # lower is better (perplexity): a rise is a regression
    assert verdict(one(2.0), one(2.2), 0.1, False) == "regressed"
    assert verdict(one(2.0), one(1.8), 0.1, False) == "improved"
    # several seeds: a drop beyond the tolerance whose intervals overlap is noise
    assert verdict(Estimate(0.8, 0.6, 0.9, 3), Estimate(0.7, 0.55, 0.85, 3), 0.02, True) == "same"
    assert verdict(Estimate(0.8, 0.78, 0.82, 3), Estimate(0.7, 0.68, 0.72, 3), 0.02, True) == "regressed"
    # separated intervals but a drop within the tolerance
    assert verdict(Estimate(0.80, 0.799, 0.801, 3), Estimate(0.79, 0.789, 0.791, 3), 0.02, True) == "same"


def test_compare_table_json_and_exit_status(db_url, capsys):
    base = [
        record(length=64, score=0.90),
        record(length=128, score=0.60),
        record(length=256, score=0.30),
        record(enc="alibi", score=0.5, tps=2000.0),
        record(enc="nope", score=0.4),
    ]
    current = [
        record(length=64, score=0.90),  # same
        record(length=128, score=0.50),  # -0.10: regressed
        record(length=256, score=0.40),  # +0.10: improved
        record(enc="alibi", score=0.5, tps=1500.0),  # same accuracy, 25% slower
        record(enc="sinusoidal", score=0.4),  # only in current
    ]
    url, (b, c) = make_db(db_url, base, current)
    cmp = compare_runs(url, b, c)
    verdicts = {x.case: x.verdict for x in cmp.cases}
    assert verdicts == {
        "alibi-k_back-L64": "same",
        "rope-k_back-L64": "same",
        "rope-k_back-L128": "regressed",
        "rope-k_back-L256": "improved",
    }
    assert cmp.only_in_base == ["nope-k_back-L64"] and cmp.only_in_current == ["sinusoidal-k_back-L64"]
    speed = {f"{s.encoding}-{s.task}": s for s in cmp.speed}
    assert speed["alibi-k_back"].verdict == "regressed" and speed["alibi-k_back"].change == pytest.approx(-0.25)
    assert speed["rope-k_back"].verdict == "same"

    assert main(["compare", "previous", "latest", "--db", url]) == 1
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("rope-k_back-L128"))
    assert "0.600" in line and "0.500" in line and "-0.100" in line and "regressed" in line
    assert "only in base run (1): nope-k_back-L64" in out and "only in current run (1): sinusoidal-k_back-L64" in out
    assert "1 accuracy regression(s), 1 speed regression(s), 1 improved, 2 same" in out

    assert main(["compare", str(b), str(c), "--db", url, "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["accuracy_regressions"] == ["rope-k_back-L128"] and data["speed_regressions"] == ["alibi-k_back"]
    assert data["only_in_current"] == ["sinusoidal-k_back-L64"]
    row = next(x for x in data["cases"] if x["case"] == "rope-k_back-L128")
    assert row["base"]["mean"] == 0.6 and row["current"]["mean"] == 0.5 and row["delta"] == pytest.approx(-0.1)

    # a looser tolerance turns the accuracy regression into "same"; the speed one stays unless loosened too
    assert main(["compare", str(b), str(c), "--db", url, "--tolerance", "0.2"]) == 1
    assert main(["compare", str(b), str(c), "--db", url, "--tolerance", "0.2", "--speed-tolerance", "0.3"]) == 0
    # reversed, the regression is an improvement and the speed went up
    capsys.readouterr()
    assert main(["compare", str(c), str(b), "--db", url, "--tolerance", "0.2"]) == 0


def test_seeds_aggregate_with_intervals(db_url):
    # base seeds 0.70..0.76, current 0.60..0.64: a drop of 0.11 with separated intervals
    base = [record(seed=s, score=v) for s, v in enumerate([0.70, 0.72, 0.74, 0.76])]
    noisy = [record(seed=s, score=v) for s, v in enumerate([0.40, 0.95, 0.50, 0.90])]  # mean 0.6875, wide
    worse = [record(seed=s, score=v) for s, v in enumerate([0.60, 0.61, 0.63, 0.64])]
    url, (b, n, w) = make_db(db_url, base, noisy, worse)
    row = compare_runs(url, b, w).cases[0]
    assert row.verdict == "regressed" and row.base.n == 4 and row.base.iqm == pytest.approx(0.73)
    assert row.base.low < 0.73 < row.base.high and row.current.high < row.base.low
    noise = compare_runs(url, b, n).cases[0]
    assert noise.delta == pytest.approx(-0.0425) and noise.verdict == "same"  # beyond tolerance, inside the noise


def test_runs_on_different_devices_are_flagged(db_url, capsys):
    """CPU float rounding depends on the thread count (parity, RoPE, seed 0: 0.99 with two threads, 0.48 with one),
    so a comparison across devices says so; the same device says nothing."""
    engine = db.open_db(db_url)
    ids = []
    for device, score in (("cpu:x86_64 x2 threads", 0.99), ("cpu:x86_64 x1 threads", 0.48),
                          ("cpu:x86_64 x1 threads", 0.48)):  # fmt: skip
        run_id = db.start_run(engine, {**RUN, "device": device})
        db.add_result(engine, run_id, record(task="parity", length=8, score=score))
        db.finish_run(engine, run_id, "finished")
        ids.append(run_id)
    engine.dispose()
    cmp = compare_runs(db_url, ids[0], ids[1])
    assert cmp.devices == ("cpu:x86_64 x2 threads", "cpu:x86_64 x1 threads")
    assert compare_runs(db_url, ids[1], ids[2]).devices is None
    main(["compare", str(ids[0]), str(ids[1]), "--db", db_url])
    out = capsys.readouterr().out
    assert "different devices (cpu:x86_64 x2 threads vs cpu:x86_64 x1 threads)" in out and "thread count" in out
    main(["compare", str(ids[0]), str(ids[1]), "--db", db_url, "--json"])
    assert json.loads(capsys.readouterr().out)["devices"] == ["cpu:x86_64 x2 threads", "cpu:x86_64 x1 threads"]
    main(["compare", str(ids[1]), str(ids[2]), "--db", db_url])
    assert "different devices" not in capsys.readouterr().out


def test_failed_current_case_is_a_regression(db_url):
    url, (b, c) = make_db(db_url, [record(score=0.8)], [record(status="diverged")])
    row = compare_runs(url, b, c).cases[0]
    assert row.verdict == "regressed" and "diverged" in row.note


def test_bad_input_exits_2(db_url, tmp_path, capsys):
    url, (b, c, d) = make_db(
        db_url,
        [record()],
        [record(enc="alibi")],  # nothing in common with b
        [record(config={"train": {"steps": 5}, "model": {"d_model": 16}})],  # config differs from b
    )
    cases = [
        (["compare", str(b), "99"], "unknown run id 99; existing runs: 1, 2, 3"),
        (["compare", "yesterday", str(b)], "not a run id"),
        (["compare", str(b), str(c)], "have no case in common"),
        (["compare", str(b), str(d)], "no case with the same config (1 differ, e.g. rope-k_back-L64: train.steps: 100"),
        (["compare", str(b), str(b)], "are the same run"),
        (["compare", str(b), str(c), "--tolerance", "-1"], "must be a non-negative number"),
    ]
    for argv, message in cases:
        assert main([*argv, "--db", url]) == 2, argv
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and message in err, (argv, err)
    assert main(["compare", "1", "2", "--db", f"sqlite:///{tmp_path / 'none.db'}"]) == 2
    assert "no such database file" in capsys.readouterr().err


def test_baseline_check_of_one_case(db_url):
    base = [record(seed=s, score=v) for s, v in enumerate([0.80, 0.70, 0.75])]
    url, (b,) = make_db(db_url, base)
    bl = Baseline(b, load(url, b), Tolerances())
    # paired with the same seed: seed 0 had 0.80; 0.77 is 0.03 worse (beyond the tolerance 0.02) but better than
    # the worst baseline seed (0.70), so it is inside the seeds' noise
    check = lambda **kw: bl.check(ResultRecord(**record(**kw)))  # noqa: E731
    assert check(seed=0, score=0.77) is None
    reg = check(seed=1, score=0.60)
    assert isinstance(reg, Regression)  # a structured verdict: the numbers, not only a message
    assert (reg.case_id, reg.seed, reg.run_id, reg.metric) == ("rope-k_back-L64", 1, 1, "accuracy")
    assert reg.value == 0.60 and reg.reference == 0.70 and reg.same_seed and reg.drop == pytest.approx(0.10)
    assert reg.worst == 0.70 and reg.baseline["n"] == 3 and reg.baseline["mean"] == pytest.approx(0.75)
    assert Regression.from_json(reg.to_json()) == reg  # travels from an xdist worker as JSON
    msg = reg.message
    assert "rope-k_back-L64 (seed 1) regressed against baseline run 1: accuracy 0.6000 vs 0.7000 (seed 1)" in msg
    assert "worse by 0.1000 > tolerance 0.02" in msg and "worst 0.7000" in msg
    assert check(seed=1, score=0.69) is None  # 0.01 drop: within the tolerance
    assert check(seed=2, score=0.9) is None  # better
    assert check(seed=0, score=0.1, config={"other": 1}) is None  # config not in the baseline
    with pytest.raises(CompareError, match=r"incompatible config \(e.g. rope-k_back: train.steps: 100 vs 7\)"):
        bl.check_compatible({("rope", "k_back"): ("h", {"train": {"steps": 7}, "model": {"d_model": 16}})})
    with pytest.raises(CompareError, match="no case in common"):
        bl.check_compatible({("alibi", "k_back"): ("h", CONFIG)})
    bl.check_compatible({("rope", "k_back"): (chash(CONFIG), CONFIG)})
