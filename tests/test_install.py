"""Installed, not forked (issue 29, items 1 and 2): a wheel built from this repository, installed in a fresh virtual
environment, runs the suite with a user's plugin from an empty directory -- as ``pebench run`` and as ``pytest
--pyargs pebench.suite`` -- and writes its results where the documented default says; a tiny package installed
there contributes an encoding and a task through the entry-point groups ``pebench.encodings`` and ``pebench.tasks``;
a clash is one line.

The virtual environment sees the packages of the environment running the tests (torch is not installed again), a
virtual environment included (``_see_running_environment``); the
wheel and the tiny package are built offline without build isolation (setuptools comes with the dev extra). Every
command runs with neither ``PYTHONPATH`` nor ``PEBENCH_DB``, so it uses the installed wheel, not this checkout."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from plugin_files import my_pe, tiny_package

import pebench.results as results

ROOT = Path(__file__).resolve().parents[1]
TINY = ("--steps", "3", "--d-model", "16", "--layers", "1", "--heads", "2", "--batch-size", "8", "--eval-samples", "8",
        "-p", "no:cacheprovider")  # fmt: skip
"""A one-layer, 16-wide model trained for 3 steps: about a second per model."""

pytestmark = pytest.mark.slow


def _env() -> dict[str, str]:
    dropped = ("PYTHONPATH", "PEBENCH_DB", "PYTEST_ADDOPTS")
    return {k: v for k, v in os.environ.items() if k not in dropped and not k.startswith("PYTEST_XDIST_")}


def _run(cmd: list[str | Path], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(c) for c in cmd], cwd=cwd, env=_env(), capture_output=True, text=True, timeout=300)


def _ok(cmd: list[str | Path], cwd: Path) -> subprocess.CompletedProcess[str]:
    proc = _run(cmd, cwd)
    assert proc.returncode == 0, f"{cmd}\n{proc.stdout}\n{proc.stderr}"
    return proc


def _see_running_environment(bin_dir: Path) -> None:
    """Let the new virtual environment see the packages of the environment running the tests: from a virtual
    environment, ``--system-site-packages`` reaches only the base interpreter's packages, not the running venv's
    (where torch is). A ``.pth`` file lists the running site directories after the new venv's own, so the installed
    wheel still comes first; the running environment's own ``.pth`` files (an editable pebench) are not processed."""
    import site

    running = [*site.getsitepackages(), site.getusersitepackages()]
    inner = _ok([bin_dir / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], bin_dir)
    lines = [p for p in running if Path(p).is_dir()]
    (Path(inner.stdout.strip()) / "zz_running_environment.pth").write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with the wheel of this repository and the tiny plugin package installed: its
    ``bin`` directory."""
    return install(tmp_path_factory.mktemp("install"))


def install(base: Path) -> Path:
    """Build the wheel of this repository and the tiny plugin package in ``base`` and install both in a fresh virtual
    environment there (pip compiles the installed modules); its ``bin`` directory."""
    src = base / "src"  # the files the wheel is built from (building in the checkout would write build/ there)
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "pebench", src / "pebench", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    offline = ("--no-deps", "--no-index", "-q")
    # both wheels are built here (the venv's own setuptools, from ensurepip, may be too old to build one)
    for tree in (src, tiny_package(base / "tiny")):
        _ok([sys.executable, "-m", "pip", "wheel", *offline, "--no-build-isolation", "-w", base / "dist", tree], base)
    _ok([sys.executable, "-m", "venv", "--system-site-packages", base / "venv"], base)
    bin_dir = base / "venv" / ("Scripts" if os.name == "nt" else "bin")
    _see_running_environment(bin_dir)
    wheels = sorted((base / "dist").glob("*.whl"))
    assert [w.name.split("-")[0] for w in wheels] == ["pebench", "pebench_tiny_plugin"], wheels
    _ok([bin_dir / "python", "-m", "pip", "install", *offline, "--force-reinstall", *wheels], base)
    return bin_dir


def test_the_wheel_runs_the_suite_with_a_plugin_from_an_empty_directory(venv, tmp_path):
    where = _ok([venv / "python", "-c", "import pebench.suite.test_positional_encodings as m; print(m.__file__)"],
                tmp_path).stdout  # fmt: skip
    assert Path(where.strip()).is_relative_to(venv.parent), where  # the installed wheel, not this checkout
    my_pe(tmp_path)
    args = ["--plugin", "my_pe.py", "--encoding", "my_pe", "--task", "k_back", *TINY]
    out = _ok([venv / "pebench", "run", *args], tmp_path).stdout  # the default protocol: a model per rate
    assert "6 passed" in out and f"-> sqlite:///{tmp_path / 'results.db'}" in out  # the current directory's root
    assert "protocol: each (encoding, task, seed) at the best of the learning rates 0.001,0.003" in out
    out = _ok([venv / "python", "-m", "pytest", "--pyargs", "pebench.suite", *args, "-k", "L64", "--lr-sweep", "off"],
              tmp_path).stdout  # fmt: skip
    assert "1 passed" in out
    df = results.load(f"sqlite:///{tmp_path / 'results.db'}")
    assert sorted(df["run_id"]) == [1] * 6 + [2] and set(df["encoding"]) == {"my_pe"} and set(df["status"]) == {"ok"}
    assert sorted(df["eval_length"]) == [64, 64, 64, 128, 128, 256, 256]
    assert df["run_options"].iloc[0]["plugins"] == ["my_pe.py"]
    written = sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("."))  # and the caches .pebench_cache
    assert written[:2] == ["my_pe.py", "results.db"] and set(written[2:]) <= {"results.db-shm", "results.db-wal"}


def test_an_installed_package_contributes_an_encoding_and_a_task(venv, tmp_path):
    encs = _ok([venv / "pebench", "list", "encodings"], tmp_path).stdout.splitlines()
    (line,) = [x for x in encs if x.startswith("tiny_pe ")]
    assert line.endswith("(from entry point pebench.encodings:tiny_pe (pebench-tiny-plugin 0.1))")
    assert all("(from" not in x for x in encs if x is not line)
    (line,) = [x for x in _ok([venv / "pebench", "list", "tasks"], tmp_path).stdout.splitlines()
               if x.startswith("tiny_back ")]  # fmt: skip
    assert line.endswith("(from entry point pebench.tasks:tiny_back (pebench-tiny-plugin 0.1))")
    db = f"sqlite:///{tmp_path / 'r.db'}"
    _ok([venv / "pebench", "run", "--encoding", "tiny_pe", "--task", "tiny_back", "-k", "L64", *TINY, "--db", db,
         "--lr-sweep", "off"], tmp_path)  # fmt: skip
    (row,) = results.load(db).to_dict("records")
    assert (row["encoding"], row["task"], row["status"]) == ("tiny_pe", "tiny_back", "ok")
    assert row["run_options"]["entry_points"] == ["entry point pebench.encodings:tiny_pe (pebench-tiny-plugin 0.1)",
                                                  "entry point pebench.tasks:tiny_back (pebench-tiny-plugin 0.1)"]


def test_a_clash_with_an_entry_point_or_a_built_in_is_one_line(venv, tmp_path):
    my_pe(tmp_path, name="tiny_pe", file="mine.py")
    proc = _run([venv / "pebench", "list", "encodings", "--plugin", "mine.py"], tmp_path)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == (f"pebench: error: encoding 'tiny_pe' from plugin {tmp_path.resolve() / 'mine.py'} clashes "
                           "with the encoding 'tiny_pe' from entry point pebench.encodings:tiny_pe "
                           "(pebench-tiny-plugin 0.1); rename one of them (its name attribute)\n")  # fmt: skip
    my_pe(tmp_path, name="rope", file="rope.py")
    proc = _run([venv / "pebench", "run", "--plugin", "rope.py", *TINY], tmp_path)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line == (f"ERROR: encoding 'rope' from plugin {tmp_path.resolve() / 'rope.py'} clashes with the encoding "
                    "'rope' from built-in pebench.encodings.rope; rename one of them (its name attribute)")  # fmt: skip
    assert not (tmp_path / "results.db").exists()  # a failed check writes nothing


def test_the_pytest_entry_point_leaves_other_sessions_alone(venv, tmp_path):
    """pebench's pytest11 entry point adds the suite's options only to a session that collects the suite: another
    project's tests in the same environment get none of them (they would clash with its own --db or --device)."""
    other = _ok([venv / "python", "-m", "pytest", "--help", "-p", "no:cacheprovider"], tmp_path).stdout
    assert "pebench" in _ok([venv / "python", "-m", "pip", "list"], tmp_path).stdout  # installed, entry point too
    assert "--encoding" not in other and "--plugin" not in other
    suite = _ok([venv / "python", "-m", "pytest", "--pyargs", "pebench.suite", "--help", "-p", "no:cacheprovider"],
                tmp_path).stdout  # fmt: skip
    assert "--encoding=ENCODING" in suite and "--plugin=PATH.py|MODULE" in suite and "pebench_plugins" in suite
