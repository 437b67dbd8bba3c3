"""Currency includes the defaults (issue 86, item 2): a cell is current only when its stored configuration is the one
this pebench builds for its case at its run's settings -- an option the run did not set at its *current* default --
and its probe agrees. RoPE's default base changed in a copy of the package stales RoPE's cells and DRoPE's (whose
probe runs RoPE), not ALiBi's; a documentation edit stales nothing; a value the run gave stays current."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import pebench.results as results
from pebench import encodings
from pebench.analysis.currency import stale_lines
from pebench.case import Case
from pebench.engine.code import cells_of
from pebench.engine.currency import changes, drift, given_of, run_settings
from pebench.store.database import open_readonly
from pebench.store.load import load_light

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "pebench" / "data" / "reference.db"


def test_changes_name_each_value_the_code_builds_otherwise():
    stored = {"encoding": {"name": "rope", "options": {"base": 10000.0}}, "train": {"steps": 600, "lr": 1e-3},
              "model": {"d_model": 128}}  # fmt: skip
    now = {"encoding": {"name": "rope", "options": {"base": 10001.0}}, "train": {"steps": 800, "lr": 1e-3},
           "model": {"d_model": 128, "dropout": 0.1}}  # fmt: skip
    assert changes(stored, now) == ["rope base 10000.0 -> 10001.0", "model dropout (none) -> 0.1",
                                    "train steps 600 -> 800"]  # fmt: skip
    assert changes(stored, stored) == []


def test_the_settings_a_run_gave_are_read_from_its_record_else_from_its_command_lines():
    assert given_of({"given": ["lr"]}, ["pytest suite --steps 4"]) == {"lr"}  # the stored list wins
    assert given_of({}, ["pytest suite --encoding rope --lr 1e-3 --steps=40 -k L64"]) == {"lr", "steps"}
    merged = {"merged_from": [{"command": "pytest suite --d-model 256"}, {"command": "pytest suite --heads 8"}]}
    assert given_of(merged, ["pebench merge a.db b.db -o c.db --slim"]) == {"d_model", "n_heads"}
    assert given_of({}, []) is None  # nothing tells: every stored value counts as set


def test_a_setting_the_run_did_not_give_is_rebuilt_at_the_current_default():
    options = {"lr": 0.003, "steps": 40, "d_model": 128, "lr_sweep": None, "given": ["steps"]}
    run = run_settings(options)
    assert run.settings.steps == 40 and run.settings.lr == 3e-3  # lr: today's default, not the stored value
    case = Case("rope", "k_back", 64)
    config = run.describe(case)
    assert config["train"]["steps"] == 40 and config["encoding"]["options"] == {"base": 10000.0}
    assert drift(config, case, run) == ""
    older = config | {"encoding": config["encoding"] | {"options": {"base": 500.0}}}
    assert drift(older, case, run) == "default changed: rope base 500.0 -> 10000.0"
    gave = run_settings(options | {"encoding_options": ["rope:base=500"]})
    assert drift(older, case, gave) == ""  # the run set base=500: still what it builds


def test_a_changed_default_stales_the_cells_run_at_it_and_not_those_that_set_it(run_suite, tiny, tmp_path, monkeypatch):
    urls = {}
    for name, extra in (("default", ()), ("given", ("--encoding-options", "rope:base=500"))):
        urls[name] = f"sqlite:///{tmp_path / name}.db"
        proc = run_suite("--encoding", "rope,alibi", "--task", "k_back", "-k", "L64", *tiny, "--steps", "2",
                         "--no-cache", "--db", urls[name], *extra)  # fmt: skip
        assert proc.returncode == 0, proc.output

    def stale(url: str) -> list[str]:
        engine = open_readonly(url)
        try:
            return stale_lines(engine, load_light(engine))
        finally:
            engine.dispose()

    assert stale(urls["default"]) == [] and stale(urls["given"]) == []
    given = results.load(urls["default"])["run_options"].iloc[0]["given"]  # the settings the command gave
    assert {"steps", "d_model", "n_heads"} <= set(given) and "lr" not in given
    rope = encodings.get("rope")
    base = dataclasses.replace(rope.options["base"], default=10001.0)
    monkeypatch.setattr(rope, "options", {**rope.options, "base": base})
    assert stale(urls["default"]) == ["rope on k_back: default changed: rope base 10000.0 -> 10001.0 (run 1)"]
    assert stale(urls["given"]) == []  # base=500 was given: what --encoding-options rope:base=500 still builds


def _package_copy(tmp_path: Path) -> Path:
    root = tmp_path / "copy"
    shutil.copytree(ROOT / "pebench", root / "pebench",
                    ignore=shutil.ignore_patterns("__pycache__", "reference.db"))  # fmt: skip
    return root


def _stale_in_copy(root: Path) -> subprocess.CompletedProcess[str]:
    """``pebench results --stale`` of the shipped reference, by the package copy at ``root``, from a cold machine
    (no fingerprint cache: what the copy cannot take from the shipped rows it computes)."""
    env = {k: v for k, v in os.environ.items() if k != "PEBENCH_DB"} | {"PYTHONPATH": str(root),
                                                                        "PEBENCH_FINGERPRINT_CACHE": "off"}
    cmd = [sys.executable, "-m", "pebench", "results", "--stale", "--db", f"sqlite:///{REFERENCE}"]
    proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


@pytest.mark.slow
def test_ropes_changed_default_stales_ropes_cells_and_dropes_not_alibis(tmp_path):
    root = _package_copy(tmp_path)
    rope = root / "pebench" / "encodings" / "rope.py"
    text = rope.read_text()
    assert text.count('Option(10000.0, "frequency base"') == 1
    rope.write_text(text.replace('Option(10000.0, "frequency base"', 'Option(10001.0, "frequency base"'))
    out = _stale_in_copy(root).stdout
    lines = out.splitlines()
    assert len(cells_of([line for line in lines if line.startswith("rope on ")])) == 36  # every task's cell
    assert "rope on k_back: default changed: rope base 10000.0 -> 10001.0 (run " in out
    assert "rope on k_back: default changed: rope base 10000.0 -> 10001.0 (run 8)" in out  # each run is judged
    drope = [line for line in lines if line.startswith("drope on ")]
    assert len(cells_of(drope)) == 36 and all("computes otherwise (probe " in line for line in drope)
    assert not any(line.startswith("alibi on ") for line in lines)


@pytest.mark.slow
def test_a_documentation_edit_stales_nothing(tmp_path):
    root = _package_copy(tmp_path)
    rope = root / "pebench" / "encodings" / "rope.py"
    rope.write_text(rope.read_text().replace('"""Rotary position embedding', '"""Rotary position embedding (edited)',
                                             1))  # fmt: skip
    assert "(edited)" in rope.read_text()
    assert _stale_in_copy(root).stdout.strip().endswith("0 stale cell(s) of 1519 (encoding, task) pairs")
