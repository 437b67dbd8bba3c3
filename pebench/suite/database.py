"""The suite's database, from the session's start to its end: checked before anything is written, the ``--baseline``
run resolved, then (in a session that runs cases) opened for the writer (:mod:`pebench.suite.writer`), and the engines
disposed however the session ends.

A session that runs no case (:func:`dry_run`: ``--collect-only`` and the like) checks the options and the database as
a run would -- a foreign, newer, incomplete or corrupt database is refused -- and writes nothing: no database file is
created, none upgraded, and no directory left behind. (No session leaves pytest-benchmark's storage directory
behind unless something was saved in it: :func:`pebench.suite.autoload.leave_no_benchmark_storage`.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pebench.analysis import lr
from pebench.analysis.baseline import Baseline
from pebench.case import Case
from pebench.errors import DatabaseError, PebenchError
from pebench.hashing import config_hash
from pebench.store.database import check_db, open_db, open_readonly
from pebench.store.lifecycle import comparable_run, resolve_run_id
from pebench.store.load import runs
from pebench.store.writable import check_sqlite_file
from pebench.suite.state import SuiteState
from pebench.suite.writer import ResultWriter

WORKER_BASELINE_KEY = "pebench_baseline_run"
NO_CASE_OPTIONS = ("collectonly", "setupplan", "setuponly", "showfixtures", "show_fixtures_per_test")
"""pytest's options under which a session runs no case (``--collect-only``, ``--setup-plan``, ...)."""


def is_worker(config: pytest.Config) -> bool:
    """Whether this process is a pytest-xdist worker (which never writes to the database)."""
    return hasattr(config, "workerinput")


def dry_run(config: pytest.Config) -> bool:
    """Whether this session runs no case: ``--collect-only``, ``--setup-plan``, ``--setup-only``, ``--fixtures``,
    ``--fixtures-per-test``. It checks the options and the database as a run would, and writes nothing."""
    return any(config.getoption(name, False) for name in NO_CASE_OPTIONS)


def open_database(config: pytest.Config, state: SuiteState, before_writing: Callable[[], None] | None = None) -> None:
    """The controller's database: checked as a dry run first (:func:`pebench.store.database.check_db`: a foreign,
    newer, incomplete or corrupt one is refused, nothing written), then the baseline is resolved, and only then, in a
    session that runs cases, the database is opened for writing (created, or upgraded) and the writer registered --
    so a refused option writes nothing. A database of an older revision is readable only once upgraded: there the
    writer opens it before the baseline is resolved (a dry run leaves it as it is and resolves no baseline). The
    writer's engine is disposed when the session ends, however it ends (``config.add_cleanup``).
    ``before_writing`` (the preflight, :mod:`pebench.suite.preflight`) runs after the dry run's checks, in a dry run
    too, and before anything is created or upgraded."""
    check_sqlite_file(state.db_url)  # before SQLite opens a read-only file (and leaves read-only -wal/-shm beside it)
    found = check_db(state.db_url)
    if found.kind != "behind":
        state.baseline = baseline(config, state)
    if before_writing is not None:
        before_writing()
    if dry_run(config):
        return
    engine = open_db(state.db_url)
    config.add_cleanup(engine.dispose)
    config.pluginmanager.register(ResultWriter(config, state, engine), "pebench-result-writer")
    if found.kind == "behind":
        state.baseline = baseline(config, state)


def baseline(config: pytest.Config, state: SuiteState) -> Baseline | None:
    """The ``--baseline`` run, checked against the selected cases' configs (a usage error when unusable)."""
    wanted = config.getoption("baseline")
    if wanted is None:
        return None
    if is_worker(config):
        run_id = config.workerinput[WORKER_BASELINE_KEY]  # type: ignore[attr-defined]
    configs = {}
    for task_name in state.tasks:
        for enc_name in state.encodings:
            if state.runner.not_applicable(enc_name, task_name) is not None:
                continue  # skipped cases: nothing to compare
            cfg = state.runner.describe(Case(enc_name, task_name, state.runner.task(task_name).train_length))
            configs[(enc_name, task_name)] = (config_hash(cfg), cfg)
    if not is_worker(config):
        try:  # reads only: a missing or empty database has no run to compare with, and is not created here
            engine = open_readonly(state.db_url)
        except DatabaseError as err:
            raise PebenchError(f"--baseline {wanted}: {err}") from None
        try:
            # this session's run row does not exist yet; previous = the finished run most comparable with its cases
            if wanted == "previous":
                run_id = comparable_run(engine, [(e, t, h) for (e, t), (h, _) in configs.items()])
            else:
                run_id = resolve_run_id(engine, wanted)
            options = next((r["options"] for r in runs(engine) if r["id"] == run_id), None)
        finally:
            engine.dispose()
        try:  # results of the two learning-rate protocols are never compared (pebench.analysis.lr)
            lr.check_same_protocol(options, {"lr_sweep": config.getoption("lr_sweep")},
                                   f"--baseline {wanted} (run {run_id}) and this run")  # fmt: skip
        except PebenchError as err:
            raise PebenchError(f"{err}; give --lr-sweep as that run did, or another baseline") from None
        config.pluginmanager.register(BaselineToWorkers(run_id), "pebench-baseline-to-workers")
    found = Baseline.load(state.db_url, run_id, state.tolerances)
    found.check_compatible(configs)
    return found


class BaselineToWorkers:
    """Controller-only: hands the resolved baseline run id to each xdist worker."""

    def __init__(self, run_id: int) -> None:
        self.run_id = run_id

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[WORKER_BASELINE_KEY] = self.run_id
