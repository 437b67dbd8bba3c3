"""Nightly regression runs: determinism, --reuse, --baseline, pytest-benchmark timing, and the CI workflow file."""

import json
import re
import shlex
from pathlib import Path

import pandas as pd
import pytest
import yaml
from sqlalchemy import create_engine, text

from pebench import store as db
from pebench.cli import build_parser, main
from pebench.engine.runner import Case, Runner
from pebench.engine.settings import Settings
from pebench.hashing import config_hash
from pebench.store.load import load

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "nightly.yml"


def test_same_seed_and_config_give_identical_metrics_on_cpu():
    settings = dict(steps=6, d_model=16, n_layers=1, n_heads=2, batch_size=8, eval_samples=16, device="cpu")
    fields = ("score", "loss", "token_accuracy", "sequence_accuracy", "final_train_loss", "curve", "metrics")
    records = []
    for seed in (0, 0, 1):
        runner = Runner(Settings(**settings, cache_dir=None, progress=False))  # fresh runner: nothing cached
        records.append(runner.run(Case("learned", "k_back", 128, seed)))
    first, again, other_seed = records
    assert first.status == "ok" and first.model_reused is False and again.model_reused is False
    for name in fields:
        assert getattr(first, name) == getattr(again, name), name
    assert first.config_hash == other_seed.config_hash  # the seed is not part of the config
    assert first.final_train_loss != other_seed.final_train_loss


def suite(run_suite, *args: str) -> tuple[int, str]:
    res = run_suite(*args, inprocess=True)
    return res.returncode, res.output


def test_reuse_benchmark_and_baseline(run_suite, tiny, tmp_path, db_url):
    """On SQLite and on a real PostgreSQL server."""
    url = db_url
    args = ["--encoding", "rope", "-k", "k_back and L64", "--steps", "3", "--db", url, "--no-cache", *tiny]

    # 1: trains; pytest-benchmark times the training, --benchmark-json holds it with the throughput
    ret, out = suite(run_suite, *args, "--benchmark-json", str(tmp_path / "b.json"))
    assert ret == 0, out
    bench = json.loads((tmp_path / "b.json").read_text())["benchmarks"]
    assert [b["name"] for b in bench] == ["test_case[rope-k_back-L64]"]
    assert bench[0]["group"] == "training" and bench[0]["stats"]["rounds"] == 1
    assert bench[0]["extra_info"]["tokens_per_s"] > 0 and bench[0]["extra_info"]["train_steps"] == 3
    first = load(url, run="latest").iloc[0]
    assert not first["model_reused"] and pd.isna(first["reused_from"])

    # 2: --reuse copies the result (no training, no benchmark), --baseline previous finds nothing worse
    ret, out = suite(run_suite, *args, "--reuse", "--baseline", "previous")
    assert ret == 0, out
    assert "pebench --reuse: 1 of 1 results copied" in out
    assert "pebench --baseline run 1: regressed: none" in out
    assert "benchmark 'training'" not in out
    second = load(url, run="latest").iloc[0]
    assert second["run_id"] == 2 and second["reused_from"] == first["id"] and second["model_reused"]
    for col in ("score", "loss", "config_hash", "code_version", "tokens_per_s", "train_time_s"):
        assert second[col] == first[col], col
    assert second["run_options"]["reuse"] is True and second["run_options"]["baseline_run"] == 1
    # a PostgreSQL password is shown and stored masked: the summary, runs.command and the stored options
    assert "s3cret" not in out and "s3cret" not in second["run_command"] + json.dumps(second["run_options"])
    engine = create_engine(url)
    with engine.begin() as con:
        curves = con.execute(text("select result_id, count(*) from curve_points group by result_id")).all()
        assert [n for _, n in curves] == [3, 3]
        # 3: make the baseline (run 2) look better than what this code produces: the case fails with the numbers
        con.execute(text("update results set score = score + 0.5 where run_id = 2"))
    engine.dispose()
    ret, out = suite(run_suite, *args, "--baseline", "2")  # retrained: deterministic, so the first score again
    assert ret == 1, out
    score = float(first["score"])
    assert re.search(
        rf"rope-k_back-L64 \(seed 0\) regressed against baseline run 2: accuracy {score:.4f} vs {score + 0.5:.4f} "
        r"\(seed 0\), worse by 0\.5000 > tolerance 0\.02",
        out,
    ), out
    assert "pebench --baseline run 2: regressed: rope-k_back-L64" in out
    assert len(load(url, run="latest")) == 1  # the failing case is still recorded

    # the aggregate comparison agrees, exit 1; the other way round it is an improvement, exit 0 (the speed of a
    # 3-step training on a shared machine is noise, so its tolerance is opened wide here)
    assert main(["compare", "2", "3", "--db", url, "--speed-tolerance", "100"]) == 1
    assert main(["compare", "3", "2", "--db", url, "--speed-tolerance", "100"]) == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--baseline", "99"], "unknown run id 99; existing runs: 1"),
        (["--baseline", "soon"], "not a run id; valid: an integer, latest, previous"),
        (["--baseline", "1", "--steps", "5"], "baseline run 1 is from an incompatible config (e.g. rope-k_back: "),
        (["--baseline", "1", "--encoding", "alibi"], "baseline run 1 has no case in common"),
        (["--baseline", "1", "--lr-sweep", "1e-3,3e-3"], "--baseline 1 (run 1) and this run differ in protocol (one "
         "learning rate vs the best learning rate of 0.001,0.003 per cell)"),
        (["--tolerance", "-0.1"], "--tolerance must be a non-negative number"),
    ],
)
def test_bad_baseline_is_a_usage_error_before_training(run_suite, tiny, tmp_path, args, message):
    url = f"sqlite:///{tmp_path / 'b.db'}"
    engine = db.open_db(url)
    run = db.start_run(engine, {"package_version": "0", "torch_version": "t", "python_version": "3",
                                "device": "cpu", "host": "h"})  # fmt: skip
    runner = Runner(Settings(steps=3, d_model=16, n_layers=1, n_heads=2, batch_size=8, eval_samples=8))
    rec = runner.describe(Case("rope", "k_back", 64))  # the config the suite computes for these options

    db.add_result(engine, run, {"case_id": "rope-k_back-L64", "encoding": "rope", "encoding_version": "1",
                                "task": "k_back", "task_version": "1", "train_length": 64, "eval_length": 64,
                                "seed": 0, "config": rec, "config_hash": config_hash(rec), "status": "ok",
                                "score": 0.5})  # fmt: skip
    engine.dispose()
    base = ["-k", "k_back and L64", "--steps", "3", "--db", url, "--no-cache", "--encoding", "rope", *tiny]
    res = run_suite(*base, *args, inprocess=True)
    assert res.returncode == 4, res.output
    err = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(err) == 1 and message in err[0], res.stderr
    assert "passed" not in res.stdout and len(load(url)) == 1


def test_nightly_workflow_is_valid():
    wf = yaml.safe_load(WORKFLOW.read_text())
    text = WORKFLOW.read_text()
    triggers = wf[True]  # YAML 1.1 reads the key `on` as True
    cron = triggers["schedule"][0]["cron"].split()
    assert len(cron) == 5 and all(re.fullmatch(r"[\d*/,-]+", f) for f in cron)
    assert triggers["workflow_dispatch"]["inputs"]["bless"]["type"] == "boolean"
    assert wf["permissions"]["actions"] == "read"  # downloading another run's artifact
    shard, merge = wf["jobs"]["shard"], wf["jobs"]["merge"]
    n = int(wf["env"]["SHARDS"])
    assert shard["strategy"]["matrix"]["shard"] == list(range(1, n + 1)) and shard["strategy"]["fail-fast"] is False
    assert merge["needs"] == "shard" and merge["if"] == "always()"
    for job in (shard, merge):
        assert job["runs-on"].startswith("ubuntu") and job["timeout-minutes"] <= 360  # GitHub's job limit
        steps = job["steps"]
        for step in steps:
            assert set(step) <= {"name", "id", "if", "uses", "with", "run", "shell", "env", "continue-on-error"}, step
            assert ("uses" in step) != ("run" in step), step
        by_id = {s["id"]: s for s in steps if "id" in s}
        job_text = yaml.safe_dump(job)
        for ref in re.findall(r"steps\.([\w-]+)\.", job_text):
            assert ref in by_id, f"reference to unknown step {ref}"
        install = next(s["run"] for s in steps if "pip install" in s.get("run", ""))
        assert "torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu" in install
        restore = next(s for s in steps if "action-download-artifact" in s.get("uses", ""))
        assert restore["with"]["name"] == "pebench-results" and restore["with"]["workflow_conclusion"] == "success"
    for ref in re.findall(r"inputs\.([\w-]+)", text):
        assert ref in triggers["workflow_dispatch"]["inputs"], ref

    # each shard: its part of the suite, with --reuse and the baseline, uploaded under its own name
    steps = {s.get("id"): s for s in shard["steps"]}
    assert "--baseline previous" in steps["baseline"]["run"]
    suite = steps["suite"]["run"]
    assert suite.startswith("python -m pytest suite") and "--reuse" in suite and "steps.baseline.outputs.args" in suite
    assert "--shard ${{ matrix.shard }}/${{ env.SHARDS }}" in suite and steps["suite"]["continue-on-error"] is True
    assert "--seeds ${{ env.SEEDS }}" in suite and int(wf["env"]["SEEDS"]) == 3  # an honest ranking needs seeds
    assert "--lr-sweep off" in suite  # one rate: the cost it is sized for, and every night comparable with the last
    upload = next(s for s in shard["steps"] if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["with"]["name"] == "pebench-shard-${{ matrix.shard }}" and upload["if"] == "always()"
    # the merge job: every shard's database into one run, then compare, report, upload, and fail when anything did
    msteps = merge["steps"]
    names = [s.get("id") or s.get("uses", "").split("@")[0] or s["name"] for s in msteps]
    download = next(s for s in msteps if s.get("uses", "").startswith("actions/download-artifact@"))
    assert download["with"]["pattern"] == "pebench-shard-*"
    by_id = {s["id"]: s for s in msteps if "id" in s}
    assert "pebench merge shards/pebench-shard-*/results.db -o nightly/results.db" in by_id["merge"]["run"]
    assert names.index("actions/download-artifact") < names.index("merge") < names.index("compare")
    final = next(s for s in msteps if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert final["with"]["name"] == "pebench-results" and final["if"] == "always()"
    assert "nightly/results.db" in final["with"]["path"] and "leaderboard.html" in final["with"]["path"]
    report = next(s for s in msteps if "pebench report" in s.get("run", ""))
    assert report["if"] == "always()" and "-o nightly/leaderboard.html" in report["run"]
    fail = msteps[-1]
    assert fail["if"] == "always()" and "needs.shard.result" in fail["run"] and "exit 1" in fail["run"]
    # the command lines parse with the real CLI
    for line in by_id["compare"]["run"].splitlines() + by_id["merge"]["run"].splitlines():
        line = line.strip()
        if line.startswith("pebench "):
            argv = shlex.split(line.split("|")[0].split(">")[0])[1:]
            ns = build_parser().parse_args(argv)
            if argv[0] == "compare":
                assert (ns.base, ns.current) == ("previous", "latest")
            else:
                assert ns.output == "nightly/results.db"
