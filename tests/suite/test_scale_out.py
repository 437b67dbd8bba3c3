"""Scale-out: every model trained once under pytest-xdist (by the model scheduler and by the checkpoint lock),
``--shard I/N`` parts that join with ``pebench merge`` into a run that compare, report and ``--baseline`` accept."""

import pytest

from pebench.cli import main as cli_main
from pebench.store.load import load
from pebench.suite.scheduling import model_of
from pebench.suite.sharding import assign, model_costs, parse_shard

MODELS = ("--task", "k_back,modular_sum", "--encoding", "rope,alibi,nope")  # 6 models x 3 lengths


def trainings(url: str) -> int:
    """Models trained in the run: a case whose model was trained (not loaded from memory or a checkpoint)."""
    df = load(url, "latest")
    return int((~df["model_reused"].astype(bool)).sum())


def scores(url: str, run: str = "latest") -> dict[str, float]:
    df = load(url, run)
    return dict(zip(df["case_id"], df["score"], strict=True))


def test_model_of_a_case_id():
    assert model_of("suite/test_positional_encodings.py::test_case[rope-k_back-L256]") == "rope-k_back"
    assert model_of("suite/test_positional_encodings.py::test_case[rope-k_back-L64-s1]") == "rope-k_back-s1"
    assert model_of("suite/t.py::test_case[rope-k_back-L64]@rope-k_back-s0") == "rope-k_back"  # xdist loadgroup
    assert model_of("tests/test_x.py::test_y") == "tests/test_x.py::test_y"
    # at a sweep point, read with the run's axes: the point's own model (a point is no model without its axes)
    swept = "suite/t.py::test_case[rope-k_back-L64-layers4-lr1e-05-s1]"
    assert model_of(swept, names=("layers", "lr")) == "rope-k_back-layers4-lr1e-05-s1"
    assert model_of(swept, seeds_together=True, names=("layers", "lr")) == "rope-k_back-layers4-lr1e-05"


@pytest.mark.slow
def test_two_workers_train_each_model_once_and_change_no_result(run_suite, tiny, tmp_path):
    pytest.importorskip("xdist")
    common = [*MODELS, "--steps", "3", *tiny]
    one = f"sqlite:///{tmp_path / 'one.db'}"
    assert run_suite(*common, "--db", one, "--cache-dir", str(tmp_path / "c1"), inprocess=True).returncode == 0
    # -n 2: the model scheduler keeps each model's lengths on one worker (no cache to share)
    two = f"sqlite:///{tmp_path / 'two.db'}"
    res = run_suite("-n", "2", *common, "--db", two, "--no-cache")
    assert res.returncode == 0, res.output
    assert trainings(two) == 6 and scores(two) == scores(one)
    # --dist each: both workers run every case; the lock beside each checkpoint lets one of them train it
    each = f"sqlite:///{tmp_path / 'each.db'}"
    res = run_suite("-n", "2", "--dist", "each", *common, "--db", each, "--cache-dir", str(tmp_path / "c3"))
    assert res.returncode == 0, res.output
    assert len(load(each)) == 36 and trainings(each) == 6
    assert scores(each) == scores(one)  # both copies of each case equal the single-process result


def test_shard_assignment_is_balanced_and_deterministic():
    costs = {("a", "t"): 10.0, ("b", "t"): 9.0, ("c", "t"): 5.0, ("d", "t"): 4.0, ("e", "t"): 2.0}
    shards = assign(costs, 2)
    load_of = [sum(c for m, c in costs.items() if shards[m] == i) for i in (1, 2)]
    assert sorted(load_of) == [14.0, 16.0] and assign(dict(reversed(costs.items())), 2) == shards
    # a model's lengths and seeds count once for training and once per length for evaluation
    cost = model_costs([("a", "t", 64, 0), ("a", "t", 128, 0), ("a", "t", 64, 1)], lambda t, L, s: (100.0, L / 64))
    assert cost == {("a", "t"): 100 + 1 + 2 + 100 + 1}
    assert parse_shard(" 2/3 ").count == 3
    for bad in ("0/3", "4/3", "2", "a/b", ""):
        with pytest.raises(Exception, match="expected I/N with 1 <= I <= N"):
            parse_shard(bad)


@pytest.mark.slow
def test_shards_merge_into_one_run_like_an_unsharded_one(run_suite, tiny, tmp_path, capsys):
    common = [*MODELS, "--steps", "3", "--no-cache", *tiny]
    whole = f"sqlite:///{tmp_path / 'whole.db'}"
    assert run_suite(*common, "--db", whole, inprocess=True).returncode == 0
    parts, models = [], []
    for i in (1, 2, 3):
        part = tmp_path / f"part{i}.db"
        res = run_suite(*common, "--db", f"sqlite:///{part}", "--shard", f"{i}/3", inprocess=True)
        assert res.returncode == 0, res.output
        df = load(f"sqlite:///{part}")
        assert len(df) > 0 and df.groupby(["encoding", "task"]).size().eq(3).all()  # whole models only
        assert df["run_options"].iloc[0]["shard"] == f"{i}/3"
        models += sorted(set(zip(df["encoding"], df["task"], strict=True)))
        parts.append(str(part))
    assert len(models) == len(set(models)) == 6  # disjoint, and together every model

    # merged into the database of the unsharded run: one new run with the same results
    assert cli_main(["merge", *parts, "-o", str(tmp_path / "whole.db")]) == 0
    assert "merged 3 part(s) (shards 1/3, 2/3, 3/3) into run 2" in capsys.readouterr().out
    assert scores(whole, "latest") == scores(whole, "1")
    merged = load(whole, "latest")
    assert merged["run_status"].iloc[0] == "finished" and merged["run_options"].iloc[0]["shard"] is None
    assert [p["shard"] for p in merged["run_options"].iloc[0]["merged_from"]] == ["1/3", "2/3", "3/3"]
    assert cli_main(["compare", "1", "2", "--db", whole, "--speed-tolerance", "100"]) == 0
    assert "18 same" in capsys.readouterr().out
    assert cli_main(["report", "--db", whole, "-o", str(tmp_path / "lb.html")]) == 0
    assert "#2 (finished)" in (tmp_path / "lb.html").read_text()
    # the merged run is a baseline like any other
    res = run_suite(*common, "--db", whole, "--baseline", "previous", "-k", "L64 or L16", inprocess=True)  # 2x each
    assert res.returncode == 0 and "pebench --baseline run 2: regressed: none" in res.stdout, res.output

    # refused, writing nothing: merging twice, overlapping parts, parts of another configuration
    assert cli_main(["merge", *parts, "-o", str(tmp_path / "whole.db")]) == 2
    assert "is already merged into run 2 of the output" in capsys.readouterr().err
    assert cli_main(["merge", parts[0], parts[0], "-o", str(tmp_path / "twice.db")]) == 2
    assert "overlapping shards, or a part given twice" in capsys.readouterr().err
    other = tmp_path / "other.db"
    assert run_suite(*MODELS, "--steps", "4", "--no-cache", *tiny, "--db", f"sqlite:///{other}",
                     "--shard", "3/3", inprocess=True).returncode == 0  # fmt: skip
    assert cli_main(["merge", parts[0], str(other), "-o", str(tmp_path / "mixed.db")]) == 2
    assert "differ in option steps: 3 vs 4" in capsys.readouterr().err
    assert cli_main(["merge", f"{parts[0]}::7", "-o", str(tmp_path / "x.db")]) == 2
    assert "unknown run id 7" in capsys.readouterr().err
    assert len(load(whole)) == 18 + 18 + 6  # the unsharded run, the merged one, the baseline run; nothing else


def test_bad_shard_is_a_usage_error(run_suite, tmp_path):
    res = run_suite("--shard", "4/3", "--db", f"sqlite:///{tmp_path / 's.db'}", "-k", "L64")
    assert res.returncode == 4 and "--shard '4/3' is not valid; expected I/N" in res.stderr


@pytest.mark.slow
def test_ray_executor_matches_the_local_run(run_suite, tiny, tmp_path):
    pytest.importorskip("ray")
    common = ["--task", "k_back", "--encoding", "rope,alibi", "--steps", "3", *tiny]
    local = f"sqlite:///{tmp_path / 'local.db'}"
    assert run_suite(*common, "--db", local, "--no-cache", inprocess=True).returncode == 0
    on_ray = f"sqlite:///{tmp_path / 'ray.db'}"
    res = run_suite(*common, "--db", on_ray, "--cache-dir", str(tmp_path / "cache"), "--executor", "ray")
    assert res.returncode == 0, res.output
    assert "pebench --executor ray (local): 2 model(s) trained, 0 failed, 0 already cached" in res.stdout
    assert scores(on_ray) == scores(local)
    df = load(on_ray)
    assert df["model_reused"].all()  # every case evaluated the model Ray trained (loaded from its checkpoint)
    assert (df["train_steps"] == 3).all() and (df["tokens_per_s"] > 0).all()
    # a second session finds the models in the cache and submits nothing
    res = run_suite(*common, "--db", on_ray, "--cache-dir", str(tmp_path / "cache"), "--executor", "ray")
    assert "0 model(s) trained, 0 failed, 2 already cached" in res.stdout


def test_ray_executor_with_xdist_is_a_usage_error(run_suite, tmp_path):
    pytest.importorskip("xdist")
    res = run_suite("-n", "2", "--executor", "ray", "--db", f"sqlite:///{tmp_path / 'r.db'}", "-k", "L64")
    assert res.returncode == 4 and "do not combine it with -n" in res.stderr


def test_model_of_with_packed_seeds():
    nodeid = "suite/test_positional_encodings.py::test_case[rope-k_back-L64-s1]"
    assert model_of(nodeid, seeds_together=True) == "rope-k_back"  # all seeds of a model on one worker


def test_packed_seeds_in_the_suite_match_one_by_one(run_suite, tiny, tmp_path):
    """``--seeds 2 --pack on`` trains both seeds of a model together; ``--pack off`` one by one: the same scores."""
    import pandas as pd

    from pebench.results import load

    frames = []
    for name, extra in (("packed", ["--pack", "on"]), ("alone", ["--pack", "off"])):
        url = f"sqlite:///{tmp_path / name}.db"
        proc = run_suite("--encoding", "rope,t5", "--task", "k_back", "-k", "L64", "--seeds", "2", "--steps", "30",
                         "--db", url, "--no-cache", *extra, *tiny)  # fmt: skip
        assert proc.returncode == 0, proc.output
        df = load(url).sort_values("case_id").reset_index(drop=True)
        packed = df["metrics"].map(lambda m: (m or {}).get("packed_with", 1))
        assert packed.tolist() == ([2] * 4 if name == "packed" else [1] * 4)
        frames.append(df)
    packed_df, alone_df = frames
    assert packed_df["case_id"].tolist() == alone_df["case_id"].tolist()
    pd.testing.assert_series_equal(packed_df["loss"], alone_df["loss"], rtol=1e-3)
    assert (packed_df["token_accuracy"] - alone_df["token_accuracy"]).abs().max() <= 0.02


def test_pack_auto_packs_off_the_cpu_only():
    from pebench.engine.settings import Settings

    assert Settings.packed_seeds("auto", 3, "cpu") == 1  # measured slower on the CPU (docs/scale-out.md)
    assert Settings.packed_seeds("on", 3, "cpu") == 3
    assert Settings.packed_seeds("off", 3, "cpu") == 1
    assert Settings.packed_seeds("on", 1, "cpu") == 1
