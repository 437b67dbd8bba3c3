"""Shared test helpers: the one way to run the benchmark suite in a test (:func:`run_suite`) and the tiny model
settings that keep such runs to seconds."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

# imported here, before any in-process suite run: pytester unloads the modules a run imported when it ends, and torch
# (with its lazily imported _dynamo) cannot be imported a second time into one interpreter
import torch  # noqa: F401
import torch._dynamo  # noqa: F401

import pebench.suite.plugin  # noqa: F401

# The tests start about a hundred Python processes (suite sessions, `pebench` commands, xdist and Ray workers). Where
# PYTHONDONTWRITEBYTECODE is set (as in some containers), each of them compiled pebench from source again: about 1.3 s
# a suite process on a 2-core AMD EPYC (the SQLite store-under-load test, 11 suite processes, alternating runs from
# clean caches: 141 s and 145 s without bytecode, 129 s and 128 s with it). The tests write bytecode, next to the
# sources as Python does by default (`__pycache__/`, ignored by git).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

# Under `pytest tests -n N` (the README's command has -n 2), each xdist worker takes its share of the cores for torch's
# threads, and the suite runs it starts in subprocesses inherit that share: N workers each running as many threads as
# there are cores oversubscribe the CPU. Quiet, 2 cores: -n 2 with one thread each 4:36; plain `pytest tests` 6:04
# with two threads, 6:22 with one. OMP_NUM_THREADS set by the caller wins. (The suite's own workers share the cores
# the same way in pebench.suite.plugin._share_cores; here the share must also reach the subprocesses, hence the env.)
if os.environ.get("PYTEST_XDIST_WORKER") and not os.environ.get("OMP_NUM_THREADS"):
    _threads = max(1, torch.get_num_threads() // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
    os.environ["OMP_NUM_THREADS"] = str(_threads)
    torch.set_num_threads(_threads)

ROOT = Path(__file__).resolve().parent.parent
TINY = ("--d-model", "16", "--layers", "1", "--heads", "2", "--batch-size", "8", "--eval-samples", "8")
"""A one-layer, 16-wide model and 8 samples per batch and evaluation: seconds per case."""


@dataclass
class SuiteRun:
    """The outcome of one ``pytest suite`` run."""

    returncode: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


@pytest.fixture
def tiny() -> tuple[str, ...]:
    return TINY


# An xdist worker's variables; an inner ``pytest suite`` session must not inherit them (pytest-benchmark reads
# PYTEST_XDIST_WORKER and switches itself off when these tests run under ``pytest tests -n N``).
XDIST_VARS = "PYTEST_XDIST_"


@pytest.fixture
def run_suite(tmp_path: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch):
    """``run_suite(*args, inprocess=None, lr_protocol=False)`` runs ``pytest suite -q -p no:cacheprovider *args``
    from ``tmp_path``: through pytester in this interpreter (the default: saves the 5-10 s start-up of a new
    one per run, :func:`_in_process`), or with ``inprocess=False`` (or ``$PEBENCH_TEST_SUBPROCESS`` set, or a
    ``prefix``) in a subprocess without ``$PEBENCH_DB`` (for what needs a process of its own: stderr apart, a kill,
    xdist or Ray workers that import what the run registered).
    Unless ``args`` name ``--lr-sweep`` or ``--lr-halving``, or ``lr_protocol`` asks for the suite's default
    protocol (a model per learning rate of :data:`pebench.analysis.lr.GRID`), it runs one rate (``--lr-sweep off``):
    the tests of the machinery train one model per case; tests/suite/test_lr_sweep.py tests the default itself.
    ``prefix`` goes before the subprocess's command (:func:`unprivileged`'s)."""

    def run(*args: str, inprocess: bool | None = None, lr_protocol: bool = False, prefix: Sequence[str] = ()
            ) -> SuiteRun:  # fmt: skip
        if inprocess is None:
            inprocess = not prefix and not os.environ.get("PEBENCH_TEST_SUBPROCESS")
        one_rate = not lr_protocol and not any(a in ("--lr-sweep", "--lr-halving") for a in args)
        base = [str(ROOT / "suite"), "-p", "no:cacheprovider", "-q", *args]
        base += ["--lr-sweep", "off"] if one_rate else []
        if inprocess:
            return _in_process(pytester, monkeypatch, tmp_path, base)
        env = {k: v for k, v in os.environ.items() if k != "PEBENCH_DB" and not k.startswith(XDIST_VARS)}
        proc = subprocess.run([*prefix, sys.executable, "-m", "pytest", *base], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=600)  # fmt: skip
        return SuiteRun(proc.returncode, proc.stdout, proc.stderr)

    return run


def _in_process(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, cwd: Path, args: list[str]) -> SuiteRun:
    """:func:`run_suite`'s run in this interpreter, as its subprocess would run: from ``cwd``, without
    ``$PEBENCH_DB`` or an xdist worker's variables (the inner session is no worker even when this one is), and
    leaving no trace: the plugins it loads are gone from the registries, ``sys.path`` and ``sys.modules`` after it."""
    with no_plugin_trace(monkeypatch), monkeypatch.context() as m:
        for k in [k for k in os.environ if k.startswith(XDIST_VARS) or k == "PEBENCH_DB"]:
            m.delenv(k)
        m.chdir(cwd)
        res = pytester.runpytest_inprocess(*args)
    return SuiteRun(int(res.ret), res.stdout.str(), res.stderr.str())


DROP = ("--bounding-set=-dac_override,-dac_read_search", "--")
"""setpriv's arguments that take from a root process the capabilities that let it write where permissions forbid."""


def _unprivileged() -> tuple[list[str] | None, str]:
    """The command prefix under which a child process meets file permissions as an unprivileged user does (None, and
    why, when there is none): nothing for a user that is not root; for root, ``setpriv`` dropping
    ``CAP_DAC_OVERRIDE`` and ``CAP_DAC_READ_SEARCH``, checked to bite on a read-only file first."""
    if os.geteuid() != 0:
        return [], ""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None, "running as root, and setpriv (util-linux) is not there to drop CAP_DAC_OVERRIDE"
    prefix = [setpriv, *DROP]
    with tempfile.TemporaryDirectory() as d:
        probe = Path(d) / "read-only"
        probe.write_text("")
        probe.chmod(0o444)
        proc = subprocess.run([*prefix, sys.executable, "-c", f"open({str(probe)!r}, 'a')"], capture_output=True,
                              text=True, timeout=60)  # fmt: skip
    if proc.returncode == 0 or "PermissionError" not in proc.stderr:
        return None, f"running as root, and {' '.join(prefix)} does not make a read-only file read-only here"
    return prefix, ""


@pytest.fixture(scope="session")
def unprivileged() -> list[str]:
    """The command prefix that makes a child process meet read-only files and directories as an unprivileged user
    does, also when the tests run as root (where chmod does not bite): skips, saying why, where there is none."""
    prefix, why = _unprivileged()
    if prefix is None:
        pytest.skip(why)
    return prefix


@contextlib.contextmanager
def no_plugin_trace(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Plugins loaded in this process inside the block leave no trace: not in the registries, the loaded plugins,
    ``sys.path`` or ``sys.modules``."""
    from pebench import plugins
    from pebench.encodings.registry import ENCODINGS
    from pebench.tasks.registry import TASKS

    with monkeypatch.context() as m, ENCODINGS.isolated(), TASKS.isolated():
        m.setattr(plugins, "_LOADED", {})
        m.setattr(sys, "path", list(sys.path))
        yield
    for name in [n for n in sys.modules if n.startswith("_pebench_plugin_")]:
        del sys.modules[name]


@pytest.fixture
def isolated(monkeypatch: pytest.MonkeyPatch):
    """Plugins loaded in this process (not in a suite subprocess) leave no trace (:func:`no_plugin_trace`)."""
    with no_plugin_trace(monkeypatch):
        yield


@pytest.fixture
def pebench_cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    """``pebench ARGS`` through :func:`pebench.cli.main` in the test's process, from the current directory and
    without ``PEBENCH_DB`` or an xdist worker's variables (a command that runs the suite -- rebuild, guard -- is no
    worker, as :func:`run_suite`'s inner session is not): a namespace of its exit status (argparse's usage errors
    included), stdout and stderr."""
    from types import SimpleNamespace

    from pebench.cli import main

    monkeypatch.delenv("PEBENCH_DB", raising=False)
    for key in [k for k in os.environ if k.startswith(XDIST_VARS)]:
        monkeypatch.delenv(key)

    def run(*args: str) -> SimpleNamespace:
        capsys.readouterr()
        try:
            returncode = main(list(args))
        except SystemExit as exit_:
            returncode = exit_.code
        out = capsys.readouterr()
        return SimpleNamespace(returncode=returncode, stdout=out.out, stderr=out.err)

    return run


@pytest.fixture(scope="session")
def postgres():
    """A throwaway PostgreSQL server for this test session (see :mod:`tests.pgcluster`)."""
    from pgcluster import Cluster

    cluster = Cluster()
    yield cluster
    cluster.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of a new, empty results database: a SQLite file, and a database on the throwaway PostgreSQL server
    (each test using this fixture runs against both)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'results.db'}"
    return request.getfixturevalue("postgres").new_database()


LR_RUN_CELLS = {("rope", "0.001"): (0.9, 0.99, 0.97), ("rope", "0.003"): (0.5, 0.60, 0.20),
                ("learned", "0.001"): (0.1, 0.10, 0.05), ("learned", "0.003"): (0.8, 0.95, 0.40)}  # fmt: skip
"""(encoding, rate) -> validation at the training length, k_back accuracy at 64 and at 128 of :func:`lr_run`."""


@pytest.fixture
def lr_run(tmp_path: Path) -> str:
    """The URL of a database with one finished run of the default learning-rate protocol (rates 1e-3 and 3e-3) on
    k_back whose cells choose different rates (:data:`LR_RUN_CELLS`: rope 1e-3, learned 3e-3 by the validation),
    one model per (encoding, rate) evaluated at 64 and 128, trained 100 s each."""
    from pebench import store

    url = f"sqlite:///{tmp_path / 'lr_run.db'}"
    engine = store.open_db(url)
    run = store.start_run(engine, {"package_version": "0", "torch_version": "t", "python_version": "3",
                                   "device": "cpu", "host": "h", "options": {"lr_sweep": "0.001,0.003"}})  # fmt: skip
    for (enc, rate), (val, *scores) in LR_RUN_CELLS.items():
        for length, score in zip((64, 128), scores, strict=True):
            curve = [{"step": 10, "loss": 1.0, "accuracy": 0.5, "val_accuracy_1x": val}] if length == 64 else []
            store.add_result(engine, run, {
                "case_id": f"{enc}-k_back-L64-lr{rate}", "axes": [["lr", rate]],
                "encoding": enc, "task": "k_back", "train_length": 64,
                "eval_length": length, "seed": 0, "status": "ok", "score": score, "metric": "accuracy",
                "higher_is_better": True, "chance_level": 0.02, "encoding_version": "1", "task_version": "1",
                "config_hash": f"{enc}{rate}", "curve": curve, "train_time_s": 100.0, "model_reused": length != 64,
                "config": {"model": {"vocab_size": 50}, "train": {"lr": float(rate)}}})  # fmt: skip
    store.finish_run(engine, run, "finished")
    engine.dispose()
    return url


SLOW_FIXTURES = frozenset({"run_suite", "postgres", "unprivileged"})
"""Fixtures whose tests the inner loop leaves out (``-m "not slow"``, README "Run the tests"): a whole suite session,
the throwaway PostgreSQL server, a child process without root's file permissions."""


@pytest.hookimpl(optionalhook=True)  # without xdist (-p no:xdist) there is no such hook
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``pytest tests -n N`` schedules by work stealing: each worker starts with an equal share of the tests in
    order, and one that runs out takes half of another's waiting tests. xdist's default ``load`` hands each worker a
    quarter of its share as one block of consecutive tests first, so the block of slow tests at the front went to one
    worker: measured in CI, 15 min 13 s against 10 min 26 s in file order for the same 1,100 s of tests."""
    from xdist.scheduler import WorkStealingScheduling

    return WorkStealingScheduling(config, log)


LONGEST = ("tests/store/test_under_load.py", "tests/test_install.py", "tests/suite/test_scale_out.py",
           "tests/test_readme.py", "tests/test_readonly_install.py")
"""The modules of the longest tests, started before the other slow ones (measured in CI at 07:43 on 2026-12-02: 90,
89, 58, 32 and 27 s; the README's commands and the read-only install, 159 and 210 s in a loaded CI run of
2026-12-05)."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark ``slow`` every test that needs one of :data:`SLOW_FIXTURES` or runs against PostgreSQL (``db_url``'s
    second value), besides those marked by hand (a module's ``pytestmark``, a test's decorator): the inner loop
    ``pytest tests -n 2 -m "not slow"`` leaves them out, the full command runs every one, the slow ones first."""
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())) or params.get("db_url") == "postgresql":
            item.add_marker(pytest.mark.slow)
    # the slow tests first (in their order), the longest before them: with work stealing (below) the longest start
    # early and the many short ones even out the workers at the end, instead of one worker finishing a long test
    # alone (75 s of the 10.5 min of `pytest tests -n 2` were one idle core when they ran in file order)
    items.sort(key=lambda item: (item.get_closest_marker("slow") is None, item.nodeid.split("::")[0] not in LONGEST))
