"""Nightly regression runs: determinism, --reuse, --baseline, pytest-benchmark timing, and the CI workflow file."""

import json
import re
import shlex
import subprocess
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


JOBS = {"plan", "guard", "rebuild", "merge", "verdict"}
STEP_KEYS = {"name", "id", "if", "uses", "with", "run", "shell", "env", "continue-on-error"}


def _check_jobs(wf: dict) -> None:
    """Every job on GitHub's Ubuntu runners inside the job limit, each step either an action or a command, every
    ``steps.X`` naming a step of its job, every training job on CPU torch 2.13.0 from the PyTorch CPU index."""
    for name, job in wf["jobs"].items():
        assert job["runs-on"].startswith("ubuntu") and job["timeout-minutes"] <= 360, name  # GitHub's job limit
        for step in job["steps"]:
            assert set(step) <= STEP_KEYS and ("uses" in step) != ("run" in step), step
        ids = {s["id"] for s in job["steps"] if "id" in s}
        for ref in re.findall(r"steps\.([\w-]+)\.", yaml.safe_dump(job)):
            assert ref in ids, f"{name}: reference to unknown step {ref}"
        if name != "verdict":
            install = next(s["run"] for s in job["steps"] if "pip install" in s.get("run", ""))
            assert "torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu" in install, name


def _pebench_lines(wf: dict) -> list[str]:
    """Every ``pebench ...`` command of the workflow, its environment and matrix filled in as on a runner."""
    env = {f"${k}": v for k, v in wf["env"].items()} | {f'"${k}"': v for k, v in wf["env"].items()}
    lines = []
    for job in wf["jobs"].values():
        for step in job["steps"]:
            for line in step.get("run", "").splitlines():
                line = line.strip().replace("${{ matrix.shard }}", "2/3")
                if line.startswith("pebench "):
                    for var, value in sorted(env.items(), key=lambda kv: -len(kv[0])):
                        line = line.replace(var, value)
                    lines.append(line.split(" | ")[0])
    return lines


def _plan_outputs(run: str, line: str, shards: str = "16") -> tuple[str, str, list[str]]:
    """The plan step's cells, groups and shard list for ``pebench rebuild --dry-run``'s first line ``line``."""
    script = [s for s in run.splitlines() if s.strip().startswith(("cells=", "groups=", "shards="))]
    out = subprocess.run(["bash", "-c", "\n".join([f"line={shlex.quote(line)}", f"MAX_SHARDS={shards}", *script,
                                                    'echo "$cells"; echo "$groups"; echo "$shards"'])],
                         capture_output=True, text=True, check=True).stdout.splitlines()  # fmt: skip
    return out[0], out[1], json.loads(out[2])


def test_nightly_workflow_is_valid():
    wf = yaml.safe_load(WORKFLOW.read_text())
    triggers = wf[True]  # YAML 1.1 reads the key `on` as True
    cron = triggers["schedule"][0]["cron"].split()
    assert len(cron) == 5 and all(re.fullmatch(r"[\d*/,-]+", f) for f in cron)
    assert "workflow_dispatch" in triggers and "inputs" not in (triggers["workflow_dispatch"] or {})  # no bless
    assert wf["permissions"]["actions"] == "read"  # downloading another run's artifact
    jobs = wf["jobs"]
    assert set(jobs) == JOBS and "needs" not in jobs["plan"] and "needs" not in jobs["guard"]  # side by side
    assert jobs["rebuild"]["needs"] == "plan" and jobs["merge"]["needs"] == ["plan", "rebuild"]
    assert set(jobs["verdict"]["needs"]) == JOBS - {"verdict"} and jobs["verdict"]["if"] == "always()"
    _check_jobs(wf)

    # plan: the base (the shipped reference, or the rebuilt one an earlier nightly made from the same file), its
    # stale groups and the shards of the dynamic matrix
    plan = {s.get("id") or s["name"]: s for s in jobs["plan"]["steps"]}
    restore = next(s for s in plan.values() if "action-download-artifact@v6" in s.get("uses", ""))
    assert restore["with"]["name"] == "pebench-reference" and restore["with"]["search_artifacts"] is True
    assert "sha256sum pebench/data/reference.db" in plan["base"]["run"] and "base.sha256" in plan["base"]["run"]
    assert "pebench results --stale --db \"$SHIPPED\"" in plan["shipped"]["run"]
    assert "pebench rebuild --db \"$BASE\" --dry-run" in plan["plan"]["run"]
    outputs = jobs["plan"]["outputs"]
    assert outputs["groups"] == "${{ steps.plan.outputs.groups }}" and "steps.plan.outputs.shards" in outputs["shards"]
    first = "sqlite:///nightly/reference.db: {} stale cell(s) in {} group(s) (run, encoding)"
    assert _plan_outputs(plan["plan"]["run"], first.format(576, 25)) == ("576", "25", [f"{i}/16" for i in
                                                                                      range(1, 17)])  # fmt: skip
    assert _plan_outputs(plan["plan"]["run"], first.format(36, 3)) == ("36", "3", ["1/3", "2/3", "3/3"])
    assert _plan_outputs(plan["plan"]["run"], first.format(0, 0))[1:] == ("0", ["1/1"])  # never an empty matrix

    # the guard: its verdict reaches the job summary, also when it fails
    guard = jobs["guard"]["steps"]
    run = next(s for s in guard if "pebench guard" in s.get("run", ""))
    assert "| tee nightly/guard.txt" in run["run"]
    summary = next(s for s in guard if "GITHUB_STEP_SUMMARY" in s.get("run", ""))
    assert summary["if"] == "always()" and "nightly/guard.txt" in summary["run"]

    # rebuild: one job per shard of plan's list; merge: the parts in place, nothing stale, the rebuilt reference
    rebuild = jobs["rebuild"]
    assert rebuild["strategy"]["matrix"]["shard"] == "${{ fromJSON(needs.plan.outputs.shards) }}"
    assert "needs.plan.outputs.groups" in rebuild["if"] and rebuild["strategy"]["fail-fast"] is False
    assert any("--shard ${{ matrix.shard }}" in s.get("run", "") for s in rebuild["steps"])
    merge = {s.get("id") or s["name"]: s for s in jobs["merge"]["steps"]}
    assert jobs["merge"]["if"].startswith("always()") and "needs.plan.outputs.groups" in jobs["merge"]["if"]
    parts = next(s for s in merge.values() if s.get("with", {}).get("pattern") == "pebench-parts-*")
    assert parts["with"]["merge-multiple"] is True
    assert "grep -q '^0 stale cell(s)'" in merge["current"]["run"]
    attach = next(s for s in merge.values() if s.get("with", {}).get("name") == "pebench-reference")
    assert {"nightly/reference.db", "nightly/base.sha256", "nightly/leaderboard.html"} <= set(
        attach["with"]["path"].split())
    fail = jobs["merge"]["steps"][-1]
    assert fail["if"] == "always()" and "::error::" in fail["run"] and "exit 1" in fail["run"]
    verdict = jobs["verdict"]["steps"][-1]["run"]
    assert "needs.guard.result" in verdict and "needs.rebuild.result" in verdict and "exit $status" in verdict

    # the command lines parse with the real CLI
    commands = {}
    for line in _pebench_lines(wf):
        argv = shlex.split(line)[1:]
        commands.setdefault(argv[0], []).append(build_parser().parse_args(argv))
    assert set(commands) == {"results", "rebuild", "guard", "report"}
    assert {ns.shard for ns in commands["rebuild"]} == {(1, 1), (2, 3)} and any(ns.merge for ns in commands["rebuild"])
    assert all(ns.db == "sqlite:///nightly/reference.db" for ns in commands["rebuild"])
    (guard_ns,) = commands["guard"]
    assert guard_ns.db == "sqlite:///nightly/guard.db" and guard_ns.pytest_args == ["-n", "2"]
