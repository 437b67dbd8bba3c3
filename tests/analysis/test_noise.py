"""No single-seed winners: a difference is marked only beyond the noise (pebench.analysis.noise), with numbers
written out by hand."""

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from pebench.analysis import noise
from pebench.analysis.noise import marked_best, measure_spread, protocol_hash, task_sigma

SIGMA = 0.02  # single-seed pair threshold: 1.96 * sqrt(2) * 0.02 = 0.0554


def test_one_seed_needs_a_measured_spread_and_a_difference_beyond_it():
    # the example: alibi 0.304 over rope 0.302 from one seed is a tie
    assert marked_best([[0.304], [0.302]], SIGMA) == [False, False]
    assert marked_best([[0.304], [0.302]], None) == [False, False]
    assert marked_best([[0.36], [0.30]], SIGMA) == [True, False]  # 0.06 > 0.0554
    assert marked_best([[0.35], [0.30]], SIGMA) == [False, False]  # 0.05 < 0.0554
    assert marked_best([[0.36], [0.30]], None) == [False, False]  # no measured spread: never marked
    # the best must beat every other, not only the runner-up's neighbour
    assert marked_best([[0.9], [0.2], [0.88]], SIGMA) == [False, False, False]
    assert marked_best([[0.9], [], [0.5]], SIGMA) == [True, False, False]  # a missing score does not compete
    assert marked_best([[0.9]], SIGMA) == [False]  # alone: nothing to beat


def test_several_seeds_need_separated_intervals():
    # means 0.61 and 0.31, Student-t 95% half-widths 4.303 * 0.01 / sqrt(3) = 0.0248: [0.585, 0.635] vs [0.285, 0.335]
    assert marked_best([[0.60, 0.62, 0.61], [0.30, 0.31, 0.32]], None) == [True, False]
    # means 0.60 and 0.50 with half-widths 12.71 * 0.1414 / sqrt(2) = 1.27: the intervals overlap, whatever sigma says
    assert marked_best([[0.5, 0.7], [0.45, 0.55]], SIGMA) == [False, False]
    # several seeds against one: the seeds' own t-interval against the single seed's 1.96 * 0.02 = 0.0392:
    # lower end 0.61 - 0.0248 = 0.5852 against 0.54 + 0.0392 = 0.5792 (marked) and 0.55 + 0.0392 = 0.5892 (not)
    assert marked_best([[0.60, 0.62, 0.61], [0.54]], SIGMA) == [True, False]
    assert marked_best([[0.60, 0.62, 0.61], [0.55]], SIGMA) == [False, False]
    # seeds that spread widely are not marked against one seed on the measured spread alone (k_back at 128, RoPE
    # against ALiBi): mean 0.92, sd 0.0985, half-width 4.303 * 0.0985 / sqrt(3) = 0.2447, lower end 0.675 < 0.68 +
    # 0.0392; the difference of the means (0.24) is far beyond 1.96 * 0.02 * sqrt(1/3 + 1) = 0.0453
    assert marked_best([[1.0, 0.95, 0.81], [0.68]], SIGMA) == [False, False]
    assert marked_best([[0.68], [1.0, 0.95, 0.81]], SIGMA) == [False, False]  # either order


ROOT = Path(__file__).resolve().parents[2]
CONFIG = {"encoding": {"name": "rope"}, "task": {"name": "k_back", "options": {"k": 3}}, "model": {"d_model": 128},
          "train": {"steps": 200}, "eval": {"samples": 256}}  # fmt: skip


def test_the_spread_applies_only_to_the_configuration_it_was_measured_with():
    data = {"tasks": {"k_back": {"sigma": 0.03, "protocol": protocol_hash(CONFIG)}}}
    assert task_sigma("k_back", CONFIG, data) == 0.03
    assert task_sigma("k_back", {**CONFIG, "encoding": {"name": "alibi"}}, data) == 0.03  # any encoding
    assert task_sigma("k_back", {**CONFIG, "train": {"steps": 50}}, data) is None  # other training
    assert task_sigma("copy", CONFIG, data) is None  # not measured
    # an encoding's own default depth (NoPE: 6 blocks) is the default protocol; other depths are not
    deep = {**CONFIG, "model": {"d_model": 128, "n_layers": 2}}
    data = {"tasks": {"k_back": {"sigma": 0.03, "protocol": protocol_hash(deep)}}}
    nope = {**deep, "encoding": {"name": "nope"}}
    assert task_sigma("k_back", {**nope, "model": {"d_model": 128, "n_layers": 6}}, data) == 0.03
    assert task_sigma("k_back", {**deep, "model": {"d_model": 128, "n_layers": 6}}, data) is None  # rope at 6
    assert task_sigma("k_back", {**nope, "model": {"d_model": 128, "n_layers": 4}}, data) is None
    shipped = noise.spread_data()
    assert "provenance" in shipped and shipped["provenance"]["regenerate"].startswith("pytest suite")
    for entry in (e for task in shipped["tasks"] for e in noise.task_entries(task)):
        # 3 normalised scores in about [0, 1] have a standard deviation of at most sqrt(1/3) = 0.577 (0, 1, 1), which
        # a task where a model finds the rule in some seeds only comes close to (parity, ALiBi: 0.48, 1.00, 0.93)
        assert 0 <= entry["sigma"] <= entry["max_sd"] <= 0.6 and entry["seeds"] >= 3
        prov = entry["provenance"]
        if "source" in prov:  # measured from a committed stop-verdict file's budget side
            assert (ROOT / prov["source"]).is_file()
            assert prov["regenerate"].startswith("python studies/stop_verdicts/verdicts.py")
        else:
            assert prov["git_commit"] and prov["regenerate"].startswith("pytest suite")


def test_the_stop_rule_is_not_part_of_the_protocol():
    """A model stopped when learned is its budget run's at an earlier point, with at most the budget side's spread
    (studies/stop_verdicts), so the spread measured at the budget serves both."""
    stopped = {**CONFIG, "train": {**CONFIG["train"], "stop": {"rule": "learned", "accuracy": 0.99, "window": 3}}}
    assert protocol_hash(stopped) == protocol_hash(CONFIG)
    other = {**CONFIG, "train": {**CONFIG["train"], "lr": 0.01}}
    assert protocol_hash(other) != protocol_hash(CONFIG)


def test_a_learning_rate_protocol_has_its_own_spread_whatever_rate_a_cell_chose():
    at = {lr: {**CONFIG, "train": {**CONFIG["train"], "lr": lr}} for lr in (0.001, 0.003)}
    grid = "0.001,0.003"
    assert protocol_hash(at[0.001], grid) == protocol_hash(at[0.003], grid)  # the grid, not the rate chosen
    assert protocol_hash(at[0.003], grid) != protocol_hash(at[0.003])  # one rate is another protocol
    assert protocol_hash(at[0.003], "0.001,0.003,0.01") != protocol_hash(at[0.003], grid)
    data = {"tasks": {"k_back": {"sigma": 0.04, "protocol": protocol_hash(at[0.001], grid)}}}
    assert task_sigma("k_back", at[0.003], data, lr_grid=grid) == 0.04
    assert task_sigma("k_back", at[0.003], data) is None  # a one-rate run does not borrow it
    # both protocols measured: each run finds its own (the nightly at one rate, the reference at the grid)
    data = {"tasks": {"k_back": [{"sigma": 0.02, "protocol": protocol_hash(at[0.003])}, data["tasks"]["k_back"]]}}
    assert task_sigma("k_back", at[0.003], data, lr_grid=grid) == 0.04 and task_sigma("k_back", at[0.003], data) == 0.02
    rows = [_row("rope", 64, s, v, config=at[lr]) for s, (v, lr) in enumerate([(0.9, 0.001), (0.7, 0.003)])]
    assert measure_spread(pd.DataFrame(rows)) == {}  # two rates: no single protocol without the grid
    assert measure_spread(pd.DataFrame(rows), grid)["k_back"]["protocol"] == protocol_hash(at[0.003], grid)


def _row(enc, length, seed, score, config=CONFIG, status="ok"):
    return {"encoding": enc, "task": "k_back", "eval_length": length, "seed": seed, "score": score, "status": status,
            "metric": "accuracy", "higher_is_better": True, "chance_level": 0.5, "config": config}  # fmt: skip


def test_measured_spread_is_the_pooled_standard_deviation_of_normalised_scores():
    # chance 0.5: normalised = 2 * (score - 0.5). rope@64: 1.0, 0.9, 0.8 -> 1.0, 0.8, 0.6 (var 0.04);
    # alibi@64: 0.75 x3 -> var 0; rope@128: 0.5, 0.6, 0.7 -> 0, 0.2, 0.4 (var 0.04). Pooled sd = sqrt(0.08 / 3).
    rows = [_row("rope", 64, s, v) for s, v in enumerate([1.0, 0.9, 0.8])]
    rows += [_row("alibi", 64, s, 0.75) for s in range(3)]
    rows += [_row("rope", 128, s, v) for s, v in enumerate([0.5, 0.6, 0.7])]
    out = measure_spread(pd.DataFrame(rows))["k_back"]
    assert out["sigma"] == pytest.approx(math.sqrt(0.08 / 3), abs=1e-6)
    assert out["max_sd"] == pytest.approx(0.2, abs=1e-6) and out["seeds"] == 3
    assert out["encodings"] == ["alibi", "rope"] and out["lengths"] == [64, 128]
    assert out["protocol"] == protocol_hash(CONFIG)
    json.dumps(out)  # shipped as JSON


def test_seed_spread_command(tmp_path, capsys):
    from pebench import store
    from pebench.cli import main

    url = f"sqlite:///{tmp_path / 's.db'}"
    engine = store.open_db(url)
    run = store.start_run(engine, {"package_version": "0", "torch_version": "t", "python_version": "3",
                                   "device": "cpu", "host": "h"})  # fmt: skip
    for r in [_row("rope", 64, s, v) for s, v in enumerate([1.0, 0.9, 0.8])]:
        store.add_result(engine, run, {**r, "case_id": f"rope-k_back-L64-s{r['seed']}", "encoding_version": "1",
                                       "task_version": "1", "train_length": 64, "config_hash": "h"})  # fmt: skip
    store.finish_run(engine, run, "finished")
    engine.dispose()
    out = tmp_path / "spread.json"
    assert main(["seed-spread", "--db", url, "-o", str(out)]) == 0
    data = json.loads(out.read_text())
    [entry] = data["tasks"]["k_back"]
    assert entry["sigma"] == pytest.approx(0.2) and entry["provenance"]["run"] == 1 and "lr_grid" not in entry
    assert "--task k_back --seeds 3" in data["provenance"]["regenerate"]  # the file's own tasks, no hand-kept list
    # writing into an existing file merges: the run's entry replaces the task's entry of its protocol; the task's
    # entries of other protocols and the other tasks (also in the one-entry format of older files) keep theirs
    data["tasks"]["copy"] = {**entry, "sigma": 0.05, "provenance": {"run": 7}}
    other = {**entry, "sigma": 0.07, "protocol": "another", "lr_grid": "0.001,0.003"}
    data["tasks"]["k_back"] = [{**entry, "sigma": 9.0}, other]
    out.write_text(json.dumps(data))
    assert main(["seed-spread", "--db", url, "-o", str(out)]) == 0
    merged = json.loads(out.read_text())["tasks"]
    assert [e["sigma"] for e in merged["k_back"]] == [pytest.approx(0.2), 0.07] and merged["k_back"][1] == other
    assert merged["copy"] == [data["tasks"]["copy"]]
    assert "--task k_back --seeds 3 --lr-sweep off " in merged["k_back"][0]["provenance"]["regenerate"]
    assert task_sigma("k_back", {}, {"tasks": merged}) is None and noise.task_entries("lm", {"tasks": merged}) == []
    assert "k_back" in capsys.readouterr().out
    engine = store.open_db(url)  # a run of one seed: a one-line error naming the command that measures it
    run = store.start_run(engine, {"package_version": "0", "torch_version": "t", "python_version": "3",
                                   "device": "cpu", "host": "h"})  # fmt: skip
    store.add_result(engine, run, {**_row("rope", 64, 0, 0.9), "case_id": "rope-k_back-L64", "encoding_version": "1",
                                   "task_version": "1", "train_length": 64, "config_hash": "h"})  # fmt: skip
    store.finish_run(engine, run, "finished")
    engine.dispose()
    assert main(["seed-spread", "--db", url]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--seeds 3" in err
