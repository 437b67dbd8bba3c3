"""No litter and no surprises: ``pebench run`` leaves nothing in the current directory but what it was asked for (no
pytest-benchmark ``.benchmarks`` unless something was saved there, no ``.pytest_cache`` unless a cache option was
given); a reader that stops early (``pebench list tasks | head -1``) gets no traceback, as from any Unix tool; the
README says what the database stores as a case id."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pebench.case import Case, Point
from pebench.suite.launch import NO_CACHE, SUITE_ARGS, asks_for_cache, pytest_args

ROOT = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    dropped = ("PEBENCH_DB", "PYTEST_ADDOPTS")
    env = {k: v for k, v in os.environ.items() if k not in dropped and not k.startswith("PYTEST_XDIST_")}
    return {**env, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}


@pytest.mark.slow
def test_a_reader_that_is_gone_gets_no_traceback():
    """Output into a pipe nobody reads any more (``head`` exited): the command stops quietly with status 32 (EPIPE,
    as ``python -m json.tool`` does), nothing on stderr."""
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line is written
    try:
        proc = subprocess.run([sys.executable, "-m", "pebench", "list", "tasks"], stdout=write, stderr=subprocess.PIPE,
                              text=True, cwd=ROOT, env=_env(), timeout=300)  # fmt: skip
    finally:
        os.close(write)
    assert (proc.returncode, proc.stderr) == (errno.EPIPE, "")


@pytest.mark.slow
def test_a_reader_that_stops_after_one_line_gets_no_traceback():
    """``pebench list tasks | head -1``: the first line, then the pipe closed; whether the rest still fitted in the
    pipe (status 0) or not (32), nothing on stderr."""
    proc = subprocess.Popen([sys.executable, "-m", "pebench", "list", "tasks"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT, env=_env())  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=300) in (0, errno.EPIPE) and err == ""
    assert first.split()[0] == "add_nocarry"


@pytest.mark.slow
def test_pebench_run_leaves_nothing_in_the_current_directory(tmp_path, tiny):
    """A run from an empty directory with its database elsewhere: the directory stays empty (pytest-benchmark's
    storage removed again, pytest's cache provider off, no checkpoint cache with --no-cache)."""
    cwd, elsewhere = tmp_path / "cwd", tmp_path / "db"
    cwd.mkdir()
    elsewhere.mkdir()
    args = ["run", "--encoding", "rope", "--task", "k_back", "-k", "L64", "--steps", "2", "--lr-sweep", "off",
            "--no-cache", *tiny, "--db", f"sqlite:///{elsewhere / 'r.db'}"]  # fmt: skip
    proc = subprocess.run([sys.executable, "-m", "pebench", *args], capture_output=True, text=True, cwd=cwd,
                          env=_env(), timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout
    assert sorted(p.name for p in cwd.iterdir()) == []


def test_benchmark_storage_stays_when_something_is_saved_in_it(run_suite, tiny, tmp_path):
    """Asked for (``--benchmark-autosave``), pytest-benchmark's storage is kept with what was saved (the run's
    directory is ``tmp_path``)."""
    done = run_suite("--encoding", "rope", "--task", "k_back", "-k", "L64", "--steps", "2", "--no-cache", *tiny,
                     "--db", f"sqlite:///{tmp_path / 'r.db'}", "--benchmark-autosave")  # fmt: skip
    assert done.returncode == 0, done.output
    assert list((tmp_path / ".benchmarks").rglob("*.json")), sorted(p.name for p in tmp_path.iterdir())


@pytest.mark.parametrize(
    ("args", "addopts", "cache"),
    [
        (["-k", "L64", "--cache-dir", "ckpt"], "", False),  # pebench's checkpoint directory, not pytest's cache
        (["--lf"], "", True),
        (["--last-failed", "--lfnf=all"], "", True),
        (["--ff"], "", True),
        (["--nf"], "", True),
        (["--sw"], "", True),
        (["--stepwise-skip"], "", True),
        (["--cache-clear"], "", True),
        (["--cache-show=*"], "", True),
        (["-p", "cacheprovider"], "", True),
        (["-pno:cacheprovider"], "", True),
        (["-o", "cache_dir=elsewhere"], "", True),
        (["--override-ini=cache_dir=elsewhere"], "", True),
        (["-k", "L64"], "--lf -q", True),  # $PYTEST_ADDOPTS
        (["-p", "xdist", "-o", "xfail_strict=true"], "", False),
    ],
)  # fmt: skip
def test_pebench_run_switches_pytest_cache_off_unless_a_cache_option_is_given(args, addopts, cache):
    assert asks_for_cache([*addopts.split(), *args]) is cache
    assert pytest_args(args, addopts) == [*SUITE_ARGS, *(() if cache else NO_CACHE), *args]


@pytest.mark.slow
def test_pebench_run_help_lists_the_cache_options(tmp_path):
    """``--help`` keeps the cache provider (it writes nothing then), so the help still lists ``--lf`` and the rest."""
    assert pytest_args(["--help"], "") == [*SUITE_ARGS, "--help"]
    proc = subprocess.run([sys.executable, "-m", "pebench", "run", "--help"], capture_output=True, text=True,
                          cwd=tmp_path, env=_env(), timeout=300)  # fmt: skip
    assert proc.returncode == 0 and "--lf, --last-failed" in proc.stdout and "--encoding=ENCODING" in proc.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_the_docs_say_what_the_database_stores_as_a_case_id():
    case = Case("rope", "k_back", 64, seed=1, point=Point.of(layers=4))
    assert (case.id, case.test_id(seeded=True)) == ("rope-k_back-L64-layers4", "rope-k_back-L64-layers4-s1")
    readme = " ".join((ROOT / "docs" / "running.md").read_text().split())
    assert ("The database stores the id without the seed (`case_id`: `rope-k_back-L64`, `rope-k_back-L64-layers4`) "
            "and the seed and the sweep point in columns of their own (`seed`; `point`") in readme  # fmt: skip
