"""Seed study 003's scaffold runs (issue 88, ``--scaffold f``): a model's checkpoint part of the way through its budget,
converted to NoPE and continued with a fresh schedule for the rest (after DroPE, arXiv:2512.12167)."""

from __future__ import annotations

import math
from pathlib import Path

import torch

import pebench.results as results
from pebench.case import Case, Point
from pebench.engine import scaffold
from pebench.engine.cache import ModelCache
from pebench.engine.configuration import describe
from pebench.engine.settings import Settings
from pebench.engine.training import train
from pebench.tasks import build as build_task


def settings(**values) -> Settings:  # type: ignore[no-untyped-def]
    base = {"steps": 20, "d_model": 32, "n_layers": 1, "batch_size": 4, "eval_samples": 4, "progress": False}
    return Settings(**(base | values))


def test_the_seed_studys_schedule_at_its_own_budget():
    """16,000 steps, the switch at 10,000 (0.625) and 15,000 (0.9375): the rest is 6,000 and 1,000 steps with warm-ups
    of 180 and 30 (3 %), from the base schedule's rate at the switch (cosine from the peak to 10 % of it)."""
    task = build_task("k_back")
    for fraction, at, rest, warm in ((0.625, 10_000, 6_000, 180), (0.9375, 15_000, 1_000, 30)):
        s = settings(steps=16_000, lr=3e-4, scaffold=fraction)
        cfg = scaffold.rest_config(s, task)
        assert (scaffold.switch_step(s, task), cfg.steps, cfg.warmup_steps) == (at, rest, warm)
        progress = (at - 50) / (16_000 - 50)  # the base's 50 warm-up steps
        assert math.isclose(cfg.lr, 3e-4 * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress))))
    assert math.isclose(scaffold.rest_config(settings(steps=16_000, lr=3e-4, scaffold=0.625), task).lr, 1.14e-4,
                        rel_tol=0.01)  # the study chose 1e-4  # fmt: skip


def test_the_checkpoint_is_the_full_runs_model_at_the_switch_then_nope_for_the_rest(tmp_path: Path):
    base = ModelCache(settings(cache_dir=tmp_path), torch.device("cpu"))
    cache = ModelCache(settings(cache_dir=tmp_path, scaffold=0.5), torch.device("cpu"))
    cache.base = base
    task = cache.task("k_back")
    case = Case("rope", "k_back", 64, 0, Point.of(scaffold="0.5"))
    trained = cache.model_for(case, describe(cache.settings, task, case))
    assert trained.model.encoding.name == "nope" and len(trained.model.blocks) == 1  # the base's depth, not NoPE's 6
    assert trained.info.steps == 10 and cache.bases[cache.model_key(case)][0] == "rope-k_back-s0 at step 10"
    # the checkpoint: the weights of the full 20-step run (its own schedule) after 10 steps, read at its curve point
    full = base.build_model(Case("rope", "k_back", 64))
    at_switch: dict[str, torch.Tensor] = {}

    def keep(info) -> None:  # type: ignore[no-untyped-def]
        if info.steps == 10:
            at_switch.update({k: v.clone() for k, v in full.state_dict().items()})

    train(full, task, base.settings.train_config(task), seed=0, device=torch.device("cpu"), progress=False,
          on_point=keep)  # fmt: skip
    saved = sorted(p for p in tmp_path.glob("rope-k_back-s0-*.pt"))
    assert len(saved) == 1  # the checkpoint at the switch, a model of its own
    partial = base.build_model(Case("rope", "k_back", 64))
    assert base.checkpoints.load(saved[0], partial).steps == 10
    for name, value in partial.state_dict().items():
        assert torch.equal(value, at_switch[name]), name
    config = describe(cache.settings, task, case)["scaffold"]
    assert config == {"fraction": 0.5, "switch_step": 10, "to": "nope", "steps": 10,
                      "lr": scaffold.rest_config(cache.settings, task).lr, "warmup_steps": 1}  # fmt: skip


def test_a_scaffold_run_is_stored_at_its_point_current_and_its_errors_are_one_line(run_suite, tiny, pebench_cli,
                                                                                    tmp_path):  # fmt: skip
    db = f"sqlite:///{tmp_path / 'r.db'}"
    res = run_suite("--encoding", "rope", "--task", "k_back", "--scaffold", "0.625", "--steps", "8", *tiny, "--db", db,
                    "--no-cache", "--no-diagnostics")  # fmt: skip
    assert res.returncode == 0, res.output
    df = results.load(db)
    assert set(df["point"]) == {"scaffold0.625"} and sorted(df["eval_length"]) == [64, 128, 256]
    assert "0 stale cell(s)" in pebench_cli("results", "--db", db, "--stale").stdout
    for args, line in ((("--scaffold", "1.5"), "--scaffold 1.5 must be a fraction of the budget in (0, 1)"),
                       (("--scaffold", "0.5", "--extend", "2"), "--scaffold and --extend are two second phases")):
        bad = run_suite("--encoding", "rope", "--task", "k_back", *args, "--db", f"sqlite:///{tmp_path / 'x.db'}")
        assert bad.returncode != 0 and line in bad.output
