"""``pebench findings`` on a hand-made database: the table with verdicts and numbers, JSON, ``--run`` (an id, latest,
all), ``--strict``, and one-line errors for bad input."""

import json

import pytest

from pebench import store as db
from pebench.analysis.stats import estimate
from pebench.cli import main

RUN = {"package_version": "0", "torch_version": "t", "python_version": "3", "device": "cpu:x", "host": "h"}
ROPE, LEARNED = (0.96, 0.97, 0.98), (0.30, 0.40, 0.50)


def record(enc, task, length, score, *, seed=0, train=64, metric="accuracy", chance=0.02):
    return {"case_id": f"{enc}-{task}-L{length}", "encoding": enc, "encoding_version": "1", "task": task,
            "task_version": "1", "train_length": train, "eval_length": length, "seed": seed,
            "config": {"model": {"vocab_size": 260}}, "config_hash": f"{enc}-{task}", "status": "ok",
            "metric": metric, "higher_is_better": metric != "perplexity", "chance_level": chance,
            "score": score}  # fmt: skip


def lm(enc, length, ppl):
    return record(enc, "lm", length, ppl, metric="perplexity", chance=256.0)


@pytest.fixture
def url(tmp_path):
    """Run 1: k_back at 2x with three seeds (seed 002's claim holds), lm with one seed (the seed-000 order holds;
    Press et al.'s does not: sinusoidal at 4x is 9.0, not double its 6.0). Run 2: rope on k_back only."""
    url = f"sqlite:///{tmp_path / 'f.db'}"
    engine = db.open_db(url)
    runs = [
        [record("rope", "k_back", 128, v, seed=s) for s, v in enumerate(ROPE)]
        + [record("learned", "k_back", 128, v, seed=s) for s, v in enumerate(LEARNED)]
        + [lm("alibi", 64, 5.0), lm("rope", 64, 5.1), lm("sinusoidal", 64, 6.0), lm("alibi", 256, 5.1),
           lm("sinusoidal", 256, 9.0)],
        [record("rope", "k_back", 128, 0.5)],
    ]  # fmt: skip
    for records in runs:
        run_id = db.start_run(engine, RUN)
        for rec in records:
            db.add_result(engine, run_id, rec)
        db.finish_run(engine, run_id, "finished")
    engine.dispose()
    return url


def test_table_of_verdicts_with_the_numbers(url, capsys):
    assert main(["findings", "--db", url, "--run", "1"]) == 0
    out = capsys.readouterr().out
    # 11 of the not run: the second phases' and the diagnostics' claims
    assert out.startswith(f"findings for run 1 of {url}: 2 hold, 1 do not hold, 15 not run")
    rope = estimate(ROPE)
    learned = estimate(LEARNED)
    assert "seed002-k_back: HOLDS  (3 seeds)" in out
    assert f"[holds ] accuracy(rope, k_back @ 2x) >= 0.95:  0.970 [{rope.low:.3f}, {rope.high:.3f}] >= 0.95" in out
    assert f"[holds ] accuracy(learned, k_back @ 2x) <= 0.65:  0.400 [{learned.low:.3f}, {learned.high:.3f}] <= " in out
    assert "seed000-lm-order: HOLDS  (1 seed)" in out
    assert "perplexity(alibi, lm @ 1x) ~= perplexity(rope, lm @ 1x) (within 5% relative):  5.00 ~= 5.10" in out
    assert "press2022-alibi-lm: DOES NOT HOLD  (1 seed)" in out
    assert ("[holds ] perplexity(alibi, lm @ 4x) <= 1.05 * perplexity(alibi, lm @ 1x):  "
            "5.10 <= 1.05 * 5.00 = 5.25") in out
    assert ("[fails ] perplexity(sinusoidal, lm @ 4x) >= 2 * perplexity(sinusoidal, lm @ 1x):  "
            "9.00 >= 2 * 6.00 = 12.00") in out
    assert "kazemnejad2023-copy: NOT RUN  (no results)" in out
    assert ("  missing (not in the run: task copy)\n"
            "  to run them: pebench run --encoding nope,rope,sinusoidal --task copy") in out


def test_latest_run_by_default_names_what_is_missing(url, capsys):
    assert main(["findings", "--db", url]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"findings for run 2 of {url}: 0 hold, 0 do not hold, 18 not run")
    assert "seed002-k_back: NOT RUN  (1 seed)" in out
    assert "[fails ] accuracy(rope, k_back @ 2x) >= 0.95:  0.500 >= 0.95" in out
    assert "[n/a   ] accuracy(learned, k_back @ 2x) <= 0.65:  - <= 0.65" in out
    assert ("  missing (not in the run: learned-k_back-L128)\n"
            "  to run them: pebench run --encoding rope,learned --task k_back") in out


def test_all_runs_use_the_latest_result_of_each_case(url, capsys):
    assert main(["findings", "--db", url, "--run", "all", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["run"] == "all" and data["runs"] == [1, 2]
    seed002 = data["findings"][0]
    # run 2's rope seed 0 (0.5) replaces run 1's (0.96); seeds 1 and 2 stay: mean (0.5 + 0.97 + 0.98) / 3
    assert seed002["checks"][0]["left"]["per_seed"] == pytest.approx({"0": 0.5, "1": 0.97, "2": 0.98})
    assert seed002["checks"][0]["left"]["mean"] == pytest.approx((0.5 + 0.97 + 0.98) / 3)
    assert seed002["verdict"] == "does not hold" and seed002["within_noise"] is True


def test_json_form(url, capsys):
    assert main(["findings", "--db", url, "--run", "1", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["counts"] == {"holds": 2, "does not hold": 1, "not run": 15}
    by_name = {f["name"]: f for f in data["findings"]}
    seed002 = by_name["seed002-k_back"]
    assert seed002["verdict"] == "holds" and seed002["seeds"] == [0, 1, 2]
    left = seed002["checks"][0]["left"]
    assert left["mean"] == pytest.approx(0.97) and left["n"] == 3
    assert (left["low"], left["high"]) == pytest.approx((estimate(ROPE).low, estimate(ROPE).high))
    assert seed002["checks"][0]["right"] == 0.95
    press = by_name["press2022-alibi-lm"]
    assert press["checks"][1]["right"]["mean"] == pytest.approx(12.0) and press["checks"][1]["holds"] is False
    parity = by_name["deletang2023-parity"]
    assert parity["verdict"] == "not run"
    assert parity["missing"] == [{"case": "task parity", "reason": "not in the run"}]
    assert parity["command"] == "pebench run --encoding nope,sinusoidal,rope,alibi --task parity"


def test_strict_fails_only_when_a_finding_does_not_hold(url, capsys):
    assert main(["findings", "--db", url, "--run", "1", "--strict"]) == 1  # Press et al. does not hold
    assert main(["findings", "--db", url, "--run", "2", "--strict"]) == 0  # nothing fails: all not run
    capsys.readouterr()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--run", "foo"], "--run 'foo' is not valid; expected a run id, latest, previous or all"),
        (["--run", "7"], "unknown run id 7; existing runs: 1, 2"),
        (["--run", "previous", "--db", "sqlite:///{tmp}/none.db"], "no such database file"),
        (["--db", "sqlite:///{tmp}/empty.db"], "no latest run: latest means the newest finished run"),
    ],
)
def test_bad_input_is_one_line(url, tmp_path, capsys, args, message):
    if "--db" not in args:
        args = [*args, "--db", url]
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    if "empty.db" in " ".join(args):
        db.open_db(f"sqlite:///{tmp_path / 'empty.db'}").dispose()
    assert main(["findings", *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pebench: error: ") and message in lines[0]
