"""The second phase of a model's life (issue 88, ``--extend F``): a trained model continued at F times its training
length, stored at its own point; the extension methods start from RoPE's model and apply their factor from the
fine-tune on (Chen et al. 2023, arXiv:2306.15595; Peng et al. 2023, arXiv:2309.00071; Lu et al. 2024,
arXiv:2409.12181)."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch

import pebench.results as results
from pebench.case import Case, Point
from pebench.engine import extension
from pebench.engine.cache import ModelCache
from pebench.engine.configuration import describe
from pebench.engine.settings import Settings
from pebench.engine.training import lr_at
from pebench.status import ResultStatus
from pebench.tasks import build as build_task

DONE_WHEN = ("--task", "k_back", "--extend", "2", "--steps", "10", "--d-model", "32", "--layers", "1",
             "--eval-samples", "8", "--batch-size", "8", "--lr-sweep", "off")  # fmt: skip
"""The issue's command (with ``--encoding rope,pi,yarn``)."""


def test_the_issues_command_stores_ext2x_results_evaluated_at_2x_and_beyond(run_suite, tmp_path):
    db = f"sqlite:///{tmp_path / 'r.db'}"
    cache = tmp_path / "cache"
    res = run_suite("--encoding", "rope,pi,yarn", *DONE_WHEN, "--db", db, "--cache-dir", str(cache))
    assert res.returncode == 0, res.output
    assert "k_back (train length 64, at ext2x)" in res.output
    lines = res.output.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("Extension by fine-tuning:"))
    ranked = [line.split()[1] for line in lines[head + 1 : head + 4]]
    assert sorted(ranked) == ["pi", "rope", "yarn"] and [line.split()[0] for line in lines[head + 1 : head + 4]] == [
        "1.", "2.", "3."] and all(" F*L " in line and "(base " in line for line in lines[head + 1 : head + 4])
    df = results.load(db)
    assert sorted(set(df["encoding"])) == ["pi", "rope", "yarn"]
    assert set(df["point"]) == {"ext2x"} and set(df["status"]) == {ResultStatus.OK}
    for _, rows in df.groupby("encoding"):
        assert sorted(rows["eval_length"]) == [64, 128, 256]  # L, F*L, 2F*L
    row = df[(df["encoding"] == "pi") & (df["eval_length"] == 128)].iloc[0]
    assert row["config"]["encoding"]["options"] | {} == {"base": 10000.0, "mode": "train", "factor": 2.0}
    phase = row["config"]["extend"]
    # the phase's budget and rate: a quarter of the 10 base steps (rounded), 0.1 of the base rate, a 3 % warm-up
    assert (phase["factor"], phase["steps"], phase["length"], phase["warmup_steps"]) == (2.0, 2, 128, 1)
    assert math.isclose(phase["lr"], 3e-4) and phase["base"]["encoding"] == "rope"
    assert {m["base_model"]["id"] for m in df["metrics"]} == {"rope-k_back-s0"}
    # one base model for the three (RoPE's, trained once), and a checkpoint per fine-tuned model
    names = sorted(p.name.rsplit("-", 1)[0] for p in cache.glob("*.pt"))
    assert names == ["pi-k_back-ext2x-s0", "rope-k_back-ext2x-s0", "rope-k_back-s0", "yarn-k_back-ext2x-s0"]
    assert set(df["train_steps"]) == {2}
    again = run_suite("--encoding", "rope,pi,yarn", *DONE_WHEN, "--db", db, "--cache-dir", str(cache), "--reuse")
    assert again.returncode == 0 and "--reuse: 9 of 9 results copied" in again.output, again.output
    assert results.load(db).query("run_id == 2")["reused_from"].notna().all()


def settings(**values) -> Settings:  # type: ignore[no-untyped-def]
    base = {"steps": 8, "d_model": 32, "n_layers": 1, "batch_size": 4, "eval_samples": 4, "progress": False}
    return Settings(**(base | values))


def test_the_base_model_is_loaded_then_fine_tuned_with_the_factor_from_then_on(tmp_path: Path):
    """The phase's model starts from the base model's weights (a fine-tune at a vanishing rate leaves them where
    they were), the base (RoPE's model) trains once and is then loaded, and PI's scale is F in the phase."""
    base_cache = ModelCache(settings(cache_dir=tmp_path), torch.device("cpu"))
    phase = ModelCache(settings(cache_dir=tmp_path, extend=2.0, extend_lr=1e-9), torch.device("cpu"))
    phase.base = base_cache
    task = phase.task("k_back")
    case = Case("pi", "k_back", 128, 0, Point.of(ext="2x"))
    trained = phase.model_for(case, describe(phase.settings, task, case))
    base = base_cache.model_for(Case("rope", "k_back", 64), {})
    assert base.reused  # trained once, for the phase
    assert trained.model.encoding.scale == 2.0 and base.model.encoding.name == "rope"  # RoPE's model, PI's factor
    for (name, p), q in zip(trained.model.state_dict().items(), base.model.state_dict().values(), strict=True):
        assert torch.allclose(p, q, atol=1e-6), name  # moved by at most the vanishing rate's steps
    assert trained.info.steps == 2
    rope = phase.model_for(replace(case, encoding="rope"), {})
    assert rope.model.encoding.opts == {"base": 10000.0}  # the control: RoPE fine-tuned unchanged


def test_the_schedule_restarts_with_a_fresh_warm_up_at_a_fraction_of_the_rate():
    task = build_task("k_back")
    s = settings(extend=2.0, extend_steps=100, lr=2e-3, extend_lr=0.25)
    cfg = extension.phase_train_config(s, task)
    assert (cfg.steps, cfg.warmup_steps, cfg.lr, cfg.stop) == (100, 3, 5e-4, "budget")
    # linear warm-up over 3 steps from the first step, then cosine to 10 % of the phase's own peak
    assert [lr_at(i, cfg) for i in range(3)] == pytest.approx([5e-4 / 3, 1e-3 / 3, 5e-4])
    assert lr_at(99, cfg) == pytest.approx(5e-4 * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * 96 / 97))))
    assert extension.steps(settings(extend=2.0), task) == 2  # a quarter of the 8 base steps


def test_pose_batches_stay_at_the_training_length_with_positions_covering_f_times_it():
    task = build_task("k_back")
    draw = extension.draw(settings(extend=4.0, pose=True), task)
    gen, pos = torch.Generator().manual_seed(0), torch.Generator().manual_seed(1)
    batch = draw(256, gen, pos)
    assert batch.positions is not None and batch.positions.shape == batch.inputs.shape == (256, 64)
    assert int(batch.positions[:, 0].max()) == 0 and int(batch.positions.max()) < 256
    assert int(batch.positions.max()) > 200  # the skips reach into the window 4x the training length
    plain = extension.draw(settings(extend=4.0), task)(2, gen, pos)
    assert plain.inputs.shape == (2, 256) and plain.positions is None  # at F*L, the encoding's positions


def test_each_method_starts_from_ropes_model_with_ropes_options():
    s = settings(extend=2.0, encoding_options={"yarn": {"base": 500.0, "beta_fast": 16.0}})
    task = build_task("k_back")
    case = Case("yarn", "k_back", 128, 1, Point.of(lr="0.001", ext="2x"))
    assert extension.base_case(case, task) == Case("rope", "k_back", 64, 1, Point.of(lr="0.001"))
    assert extension.base_settings(s, case).encoding_options["rope"] == {"base": 500.0}
    assert extension.base_settings(s, case).extend is None
    assert extension.encoding_options(s, "yarn") == {"base": 500.0, "beta_fast": 16.0, "mode": "train", "factor": 2.0}
    assert extension.encoding_options(s, "alibi") == {}
    assert extension.lengths(task, 2.0) == [64, 128, 256] and extension.lengths(task, 3.0) == [64, 192, 384]


@pytest.mark.parametrize(("args", "line"), [
    (("--extend", "1"), "--extend 1.0 must be a number above 1"),
    (("--extend", "x"), "--extend 'x' is not a number"),
    (("--extend", "16"), "--extend 16 evaluates k_back at 2F*L = 2048 (2048 tokens), beyond the 1024 tokens"),
    (("--pose",), "--pose sets the fine-tune of --extend F: give --extend too"),
    (("--extend", "2", "--extend-steps", "0"), "--extend-steps 0 must be a positive integer"),
    (("--extend", "2", "--extend-lr", "2"), "--extend-lr 2.0 must be a fraction in (0, 1]"),
    (("--extend", "2", "--lr-halving", "--lr-sweep"), "--extend continues each trained model: run it without"),
])  # fmt: skip
def test_bad_extension_input_is_one_line_before_any_training(run_suite, tmp_path, args, line):
    res = run_suite("--encoding", "rope", "--task", "k_back", *args, "--db", f"sqlite:///{tmp_path / 'r.db'}")
    assert res.returncode != 0 and line in res.output and "Traceback" not in res.output
    assert not (tmp_path / "r.db").exists()


def test_a_phase_whose_base_diverged_is_stored_as_failed_naming_the_base(run_suite, tiny, tmp_path):
    db = f"sqlite:///{tmp_path / 'r.db'}"
    res = run_suite("--encoding", "pi", "--task", "k_back", "--extend", "2", "--steps", "20", *tiny, "--lr", "1e6",
                    "--db", db, "--no-cache", "-k", "L128")  # fmt: skip
    df = results.load(db)
    assert len(df) == 1 and df["status"].iloc[0] == ResultStatus.ERROR, res.output
    assert df["message"].iloc[0].startswith("pi on k_back failed in training: RuntimeError: its base model "
                                            "rope-k_back-s0 diverged")  # fmt: skip


def test_under_the_default_protocol_each_cell_is_shown_at_its_chosen_rate(run_suite, tmp_path):
    """--extend with the learning-rate sweep: a model per rate, each fine-tuned at 0.1 of its rate; the summary
    reads each cell's chosen rate from points with the extension's axis too."""
    res = run_suite("--encoding", "rope,pi", *DONE_WHEN[:-2], "--db", f"sqlite:///{tmp_path / 'r.db'}",
                    "--no-diagnostics", lr_protocol=True)  # fmt: skip
    assert res.returncode == 0, res.output
    line = next(line for line in res.output.splitlines() if "each at its best rate of" in line)
    assert " - " not in line and "pi 0.00" in line and "rope 0.00" in line
    assert "k_back (train length 64, at ext2x)" in res.output
    df = results.load(f"sqlite:///{tmp_path / 'r.db'}")
    assert sorted(set(df["point"])) == ["lr0.001-ext2x", "lr0.003-ext2x"]


def test_pebench_rebuild_retrains_a_stale_extension_cell(run_suite, pebench_cli, tmp_path, monkeypatch):
    """A changed phase setting stales an ext2x cell; rebuild reruns it with its run's flags (--extend 2 and the
    switch --no-diagnostics among them) and merges it back: current again."""
    import sqlite3

    db_path = tmp_path / "r.db"
    db = f"sqlite:///{db_path}"
    assert run_suite("--encoding", "rope,pi", *DONE_WHEN, "--db", db, "--no-diagnostics").returncode == 0
    with sqlite3.connect(db_path) as con:  # as if the default budget had been 3 steps when these were stored
        for rid, cfg in con.execute("select id, config from results where encoding = 'pi'").fetchall():
            config = json.loads(cfg)
            config["extend"]["steps"] = 3
            con.execute("update results set config = ? where id = ?", (json.dumps(config), rid))
    assert "pi on k_back: default changed: extend steps 3 -> 2" in pebench_cli("results", "--db", db, "--stale").stdout
    monkeypatch.chdir(tmp_path)
    assert pebench_cli("rebuild", "--db", db).returncode == 0
    assert pebench_cli("rebuild", "--db", db, "--merge").returncode == 0
    assert "0 stale cell(s)" in pebench_cli("results", "--db", db, "--stale").stdout
    assert not any("attn_entropy" in m for m in results.load(db)["metrics"])  # rebuilt with --no-diagnostics
