"""The README's commands run as written (issue 91, item 5): every ``pebench`` command of its code blocks, in their
order, from a wheel of this repository installed in a fresh virtual environment, in an empty directory, with neither
``PYTHONPATH`` nor ``PEBENCH_DB`` (:func:`test_install.install`).

The commands that train run as written at a tiny size and budget added through ``PYTEST_ADDOPTS`` (pytest's own way
of adding options to a command line; ``pebench run`` is pytest), so the test takes about a minute instead of hours.
The two that put a run beside the shipped reference (``--with-reference``) cannot be shrunk -- nothing smaller joins
the reference's cells -- so they run with ``--collect-only``, at their real settings: options, plugin, tier and the
plan of models are checked and nothing trains (``tests/test_readonly_install.py`` trains such a run for real). The
install and test commands (``pip``, ``pytest tests``) are what this test and CI themselves run, and are left out."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest
from test_install import _env, install

ROOT = Path(__file__).resolve().parents[1]
TINY = "--steps 2 --d-model 16 --layers 1 --heads 2 --batch-size 8 --eval-samples 8"
"""What ``PYTEST_ADDOPTS`` adds to a README command that trains."""

pytestmark = pytest.mark.slow


def readme_commands(text: str) -> list[str]:
    """The ``pebench`` commands of the README's fenced code blocks, in order, without their comments."""
    out = []
    for block in re.findall(r"```(?:bash)?\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            command = line.split(" # ", 1)[0].strip()
            if command.startswith("pebench "):
                out.append(command)
    return out


def test_the_readme_lists_its_commands():
    commands = readme_commands((ROOT / "README.md").read_text())
    assert commands[:2] == ["pebench run --encoding nope,sinusoidal,learned,rope,alibi --task k_back -n 2",
                            "pebench report -o leaderboard.html"]  # fmt: skip
    assert sum("--with-reference" in c for c in commands) == 2 and len(commands) >= 10


def test_every_command_of_the_readme_runs_from_a_wheel(tmp_path_factory: pytest.TempPathFactory):
    bin_dir = install(tmp_path_factory.mktemp("readme-install"))
    here = tmp_path_factory.mktemp("readme")
    env = _env() | {"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    outputs = {}
    for command in readme_commands((ROOT / "README.md").read_text()):
        argv = shlex.split(command)
        trains = argv[1] == "run"
        addopts = ("--collect-only" if "--with-reference" in argv else TINY) if trains else ""
        proc = subprocess.run([bin_dir / argv[0], *argv[1:]], cwd=here, env=env | {"PYTEST_ADDOPTS": addopts},
                              capture_output=True, text=True, timeout=600)  # fmt: skip
        assert proc.returncode == 0, f"{command}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        if "--collect-only" in addopts:
            assert "models to train" in proc.stdout + proc.stderr, command
        outputs[command] = proc.stdout
    assert {"results.db", "leaderboard.html", "my_pe.py", "test_my_pe.py"} <= {p.name for p in here.iterdir()}
    table = next(out for c, out in outputs.items() if c.startswith("pebench table"))
    assert "\\begin{tabular}" in table and "path" in table
    stale = next(out for c, out in outputs.items() if "--stale" in c)
    assert stale.splitlines()[-1].startswith("0 stale cell(s) of")
    findings = next(out for c, out in outputs.items() if c.startswith("pebench findings"))
    assert findings.startswith("findings for latest result of every case") and "HOLDS" in findings
