"""The suite's regression-run options: ``--reuse``, ``--baseline``, ``--tolerance``, ``--ppl-tolerance`` and
``--deterministic`` (wired into pytest by :mod:`pebench.pytest_plugin`).

* ``--reuse`` gives the session's :class:`~pebench.runner.Runner` a :class:`~pebench.reuse.ReuseLookup`, so a case
  whose result already exists for the same config and code is copied instead of trained.
* ``--baseline previous|RUN_ID`` is resolved once, in the controller, before any training (``previous``: the newest
  run already in the database, i.e. the one before this session's); the id is handed to xdist workers through
  ``workerinput``, and every process loads the baseline's results to check each case as it finishes
  (:class:`pebench.compare.Baseline`). An unknown id or a baseline with no compatible case is a usage error.
* ``--deterministic`` turns on :func:`torch.use_deterministic_algorithms` (and sets ``CUBLAS_WORKSPACE_CONFIG``).
  On CPU the suite is deterministic without it; on CUDA some kernels (e.g. the backward of the embedding lookup and
  of some attention kernels) use atomic adds and are not bit-for-bit reproducible unless it is set. The flag is
  recorded in the run's options.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
import torch

from pebench import db
from pebench.compare import Baseline, Tolerances
from pebench.errors import PebenchError
from pebench.hashing import config_hash
from pebench.runner import Case

WORKER_BASELINE_KEY = "pebench_baseline_run"


def add_options(parser: pytest.Parser) -> None:
    g = parser.getgroup("pebench-nightly", "pebench regression runs")
    g.addoption(
        "--reuse",
        action="store_true",
        help="copy a case's result from an earlier run with the same config hash and code version instead of "
        "training (marked reused_from in the database)",
    )
    g.addoption(
        "--baseline",
        default=None,
        metavar="previous|RUN_ID",
        help="fail each case that regressed against this run of the database (previous: the newest run before "
        "this one)",
    )
    g.addoption("--tolerance", type=float, default=0.02, help="accuracy drop tolerated by --baseline (default 0.02)")
    g.addoption(
        "--ppl-tolerance", type=float, default=0.05, help="relative perplexity rise tolerated by --baseline (0.05)"
    )
    g.addoption(
        "--deterministic",
        action="store_true",
        help="torch.use_deterministic_algorithms(True) (needed for bit-reproducible CUDA runs; CPU already is)",
    )


def configure(config: pytest.Config, state: dict[str, Any], url: str, runner: Any, is_worker: bool) -> None:
    """Validate the nightly options and load the baseline; raises PebenchError (a usage error) on bad input."""
    if config.getoption("deterministic"):
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True)
    check_positive_tolerances(config)
    tol = Tolerances(accuracy=config.getoption("tolerance"), perplexity=config.getoption("ppl_tolerance"))
    state["tolerances"] = tol
    state["baseline"] = None
    wanted = config.getoption("baseline")
    if wanted is None:
        return
    if is_worker:
        run_id = config.workerinput[WORKER_BASELINE_KEY]  # type: ignore[attr-defined]
    else:
        engine = db.open_db(url)
        try:
            # this session's run row does not exist yet, so the newest run is the previous one
            run_id = db.resolve_run_id(engine, "latest" if wanted == "previous" else wanted)
        finally:
            engine.dispose()
        config.pluginmanager.register(_BaselineToWorkers(run_id), "pebench-baseline-to-workers")
    baseline = Baseline.load(url, run_id, tol)
    configs = {}
    for task_name in state["tasks"]:
        for enc_name in state["encodings"]:
            cfg = runner.describe(Case(enc_name, task_name, runner.task(task_name).train_length))
            configs[(enc_name, task_name)] = (config_hash(cfg), cfg)
    baseline.check_compatible(configs)
    state["baseline"] = baseline


class _BaselineToWorkers:
    """Controller-only: hands the resolved baseline run id to each xdist worker."""

    def __init__(self, run_id: int) -> None:
        self.run_id = run_id

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[WORKER_BASELINE_KEY] = self.run_id


class NightlySummary:
    """Controller-only: counts reused results and baseline regressions for the terminal summary."""

    def __init__(self, property_name: str, baseline: Baseline | None) -> None:
        self.property_name = property_name
        self.baseline = baseline
        self.results = 0
        self.reused = 0
        self.regressed: list[str] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call":
            return
        for name, value in report.user_properties:
            if name == self.property_name:
                record = json.loads(value)
                self.results += 1
                self.reused += bool(record.get("reused_from"))
                if report.failed and "regressed against baseline" in str(report.longrepr):
                    self.regressed.append(report.nodeid.rsplit("[", 1)[-1].rstrip("]"))

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        if not self.results:
            return
        if config.getoption("reuse"):
            terminalreporter.write_line(f"pebench --reuse: {self.reused} of {self.results} results copied")
        if self.baseline is not None:
            what = ", ".join(self.regressed) if self.regressed else "none"
            terminalreporter.write_line(f"pebench --baseline run {self.baseline.run_id}: regressed: {what}")


def check_positive_tolerances(config: pytest.Config) -> None:
    for flag in ("tolerance", "ppl_tolerance"):
        value = config.getoption(flag)
        if not value >= 0:
            raise PebenchError(f"--{flag.replace('_', '-')} must be a non-negative number, got {value}")
