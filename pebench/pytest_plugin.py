"""The suite's pytest wiring: command-line options, one parametrized case per (encoding, task, length, seed), a
session-wide :class:`~pebench.runner.Runner`, and the results database.

``suite/conftest.py`` imports this module, so the options exist when the suite is collected (``pytest suite``).

Results travel from the test to the database through the test report: a case stores its record with
``record_property``, and the process that runs pytest's reporting (the controller under pytest-xdist, or the only
process) writes it in :func:`pytest_runtest_logreport`. So only one process ever writes, and no row is lost with
``-n 2``.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from pebench import db, encodings, nightly, tasks
from pebench.device import pick_device
from pebench.errors import PebenchError
from pebench.options import parse_assignments
from pebench.provenance import run_info
from pebench.registry import parse_names
from pebench.runner import Case, Runner, Settings
from pebench.tasks.base import TIERS

RESULT_PROPERTY = "pebench_result"
_STATE = pytest.StashKey[dict[str, Any]]()

__all__ = [
    "pytest_addoption",
    "pytest_configure",
    "pytest_generate_tests",
    "pytest_collection_modifyitems",
    "pebench_runner",
    "pebench_settings",
    "pebench_baseline",
]


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("pebench", "pebench benchmark suite")
    g.addoption("--db", default=None, help="results database URL (env PEBENCH_DB; default sqlite:///<root>/results.db)")
    g.addoption("--tier", default="quick", choices=TIERS, help="quick: train length, 2x, 4x; full: more lengths")
    g.addoption("--steps", type=int, default=None, help="training steps per model (default: the task's own)")
    g.addoption("--seeds", type=int, default=1, help="number of seeds per (encoding, task) (default 1)")
    g.addoption("--d-model", type=int, default=128, help="model width (default 128)")
    g.addoption("--layers", type=int, default=2, help="transformer blocks (default 2)")
    g.addoption("--heads", type=int, default=4, help="attention heads (default 4)")
    g.addoption("--batch-size", type=int, default=64, help="training batch size (default 64)")
    g.addoption("--lr", type=float, default=3e-3, help="peak learning rate of AdamW (default 3e-3)")
    g.addoption("--eval-samples", type=int, default=256, help="held-out sequences per case (default 256)")
    g.addoption("--device", default="auto", help="auto (cuda, then mps, then cpu), cpu, cuda, cuda:N or mps")
    g.addoption("--encoding", default=None, help="comma-separated encodings to run (default: all)")
    g.addoption("--task", default=None, help="comma-separated tasks to run (default: all)")
    g.addoption(
        "--encoding-options",
        action="append",
        default=[],
        metavar="NAME:KEY=VALUE,...",
        help="options of one encoding, e.g. rope:base=500 (repeatable)",
    )
    g.addoption(
        "--task-options",
        action="append",
        default=[],
        metavar="NAME:KEY=VALUE,...",
        help="options of one task, e.g. k_back:k=5 (repeatable)",
    )
    g.addoption("--cache-dir", default=None, help="checkpoint directory (default <root>/.pebench_cache)")
    g.addoption("--no-cache", action="store_true", help="neither load nor save model checkpoints")
    g.addoption("--report", default=None, metavar="PATH", help="render the run's HTML leaderboard to PATH at the end")

    nightly.add_options(parser)


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _names(config: pytest.Config, option: str, registry: Any) -> list[str]:
    raw = config.getoption(option)
    if not raw:
        return registry.available()
    return parse_names(raw, registry.get)  # an unknown name raises UnknownNameError listing the valid names


def _named_options(config: pytest.Config, option: str, registry: Any) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for item in config.getoption(option):
        name, sep, rest = item.partition(":")
        if not sep:
            raise PebenchError(f"{option} {item!r} must look like NAME:KEY=VALUE[,KEY=VALUE]")
        registry.get(name.strip())
        out.setdefault(name.strip(), {}).update(parse_assignments(rest))
    return out


def _settings(config: pytest.Config) -> Settings:
    root = Path(config.rootpath)
    cache = None if config.getoption("no_cache") else Path(config.getoption("cache_dir") or root / ".pebench_cache")
    positive = {
        "--steps": config.getoption("steps"),
        "--seeds": config.getoption("seeds"),
        "--d-model": config.getoption("d_model"),
        "--layers": config.getoption("layers"),
        "--heads": config.getoption("heads"),
        "--batch-size": config.getoption("batch_size"),
        "--eval-samples": config.getoption("eval_samples"),
    }
    for flag, value in positive.items():
        if value is not None and value <= 0:
            raise PebenchError(f"{flag} must be a positive integer, got {value}")
    if not config.getoption("lr") > 0:
        raise PebenchError(f"--lr must be positive, got {config.getoption('lr')}")
    if config.getoption("d_model") % config.getoption("heads"):
        raise PebenchError(
            f"--d-model ({config.getoption('d_model')}) must be divisible by --heads ({config.getoption('heads')})"
        )
    settings = Settings(
        steps=config.getoption("steps"),
        batch_size=config.getoption("batch_size"),
        lr=config.getoption("lr"),
        d_model=config.getoption("d_model"),
        n_layers=config.getoption("layers"),
        n_heads=config.getoption("heads"),
        eval_samples=config.getoption("eval_samples"),
        device=config.getoption("device"),
        cache_dir=cache,
        encoding_options=_named_options(config, "--encoding-options", encodings),
        task_options=_named_options(config, "--task-options", tasks),
    )
    pick_device(settings.device)  # fail early on an unusable device
    return settings


def db_url(config: pytest.Config) -> str:
    return config.getoption("db") or os.environ.get("PEBENCH_DB") or f"sqlite:///{Path(config.rootpath) / 'results.db'}"


def pytest_configure(config: pytest.Config) -> None:
    """Validate every option before collection; the controller opens the database (before any training)."""
    state: dict[str, Any] = {}
    config.stash[_STATE] = state
    try:
        state["settings"] = _settings(config)
        state["encodings"] = _names(config, "encoding", encodings)
        state["tasks"] = _names(config, "task", tasks)
        # options are validated by building each selected encoding and task once
        runner = Runner(state["settings"])
        for task_name in state["tasks"]:
            task = runner.task(task_name)
            for enc_name in state["encodings"]:
                runner.describe(Case(enc_name, task_name, task.train_length))
        if not _is_worker(config):
            report = config.getoption("report")
            if report is not None:
                parent = Path(report).expanduser().resolve().parent
                if Path(report).is_dir() or not parent.is_dir():
                    raise PebenchError(f"--report {report!r}: give a file name in an existing directory")
            url = db_url(config)
            config.pluginmanager.register(ResultWriter(config, db.open_db(url), url), "pebench-result-writer")
        # --reuse / --baseline / --deterministic (pebench.nightly)
        nightly.configure(config, state, db_url(config), runner, _is_worker(config))
        if not _is_worker(config):
            summary = nightly.NightlySummary(RESULT_PROPERTY, state["baseline"])
            config.pluginmanager.register(summary, "pebench-nightly-summary")
    except PebenchError as err:
        raise pytest.UsageError(str(err)) from None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "pebench_case" not in metafunc.fixturenames:
        return
    state = metafunc.config.stash[_STATE]
    runner = Runner(state["settings"])
    seeds = metafunc.config.getoption("seeds")
    # the quick tier without -m never runs full-only lengths: don't generate them (the Chomsky tasks alone have
    # hundreds of full-tier lengths each, which would make every quick run collect and deselect thousands of cases)
    every_length = metafunc.config.getoption("tier") == "full" or bool(metafunc.config.option.markexpr)
    params = []
    for enc_name in state["encodings"]:
        for task_name in state["tasks"]:
            task = runner.task(task_name)
            quick = set(task.eval_lengths("quick"))
            lengths = task.eval_lengths("full") if every_length else task.eval_lengths("quick")
            for length in lengths:
                for seed in range(seeds):
                    case = Case(enc_name, task_name, length, seed)
                    marks = [pytest.mark.full]
                    if length in quick:
                        marks.append(pytest.mark.quick)
                    # all lengths of one model on one xdist worker with --dist loadgroup
                    marks.append(pytest.mark.xdist_group(f"{enc_name}-{task_name}-s{seed}"))
                    case_id = case.id if seeds == 1 else f"{case.id}-s{seed}"
                    params.append(pytest.param(case, id=case_id, marks=marks))
    metafunc.parametrize("pebench_case", params)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Quick tier (the default): drop full-tier-only lengths unless ``-m`` selects by marker."""
    if config.getoption("tier") == "full" or config.option.markexpr:
        return
    keep, drop = [], []
    for item in items:
        is_case = item.get_closest_marker("full") is not None
        (drop if is_case and item.get_closest_marker("quick") is None else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture(scope="session")
def pebench_settings(pytestconfig: pytest.Config) -> Settings:
    return pytestconfig.stash[_STATE]["settings"]


@pytest.fixture(scope="session")
def pebench_runner(pytestconfig: pytest.Config, pebench_settings: Settings) -> Runner:
    """One runner per session (per xdist worker): its in-memory cache shares models across lengths."""
    capman = pytestconfig.pluginmanager.getplugin("capturemanager")

    def progress_context() -> contextlib.AbstractContextManager[Any]:
        if capman is None or _is_worker(pytestconfig):
            return contextlib.nullcontext()
        return capman.global_and_fixture_disabled()

    settings = pebench_settings
    if _is_worker(pytestconfig):
        settings.progress = False
    reuse = None
    if pytestconfig.getoption("reuse"):
        from pebench.reuse import ReuseLookup

        reuse = ReuseLookup(db_url(pytestconfig), pick_device(settings.device).type)
    return Runner(settings, progress_context=progress_context, reuse=reuse)


@pytest.fixture(scope="session")
def pebench_baseline(pytestconfig: pytest.Config) -> Any:
    """The :class:`pebench.compare.Baseline` of ``--baseline`` (None without it)."""
    return pytestconfig.stash[_STATE].get("baseline")


def _options_for_run(config: pytest.Config) -> dict[str, Any]:
    names = [
        "tier", "steps", "seeds", "d_model", "layers", "heads", "batch_size", "lr", "eval_samples", "device",
        "encoding", "task", "encoding_options", "task_options", "no_cache",
        "reuse", "baseline", "tolerance", "ppl_tolerance", "deterministic",
    ]  # fmt: skip
    opts = {n: config.getoption(n) for n in names}
    opts["torch_deterministic_algorithms"] = torch.are_deterministic_algorithms_enabled()
    baseline = config.stash[_STATE].get("baseline")
    opts["baseline_run"] = baseline.run_id if baseline is not None else None
    opts["keyword"] = config.option.keyword
    opts["markexpr"] = config.option.markexpr
    opts["numprocesses"] = getattr(config.option, "numprocesses", None)
    return opts


class ResultWriter:
    """Registered in the reporting process only: writes each case's record to the database as its report arrives."""

    def __init__(self, config: pytest.Config, engine: Any, url: str) -> None:
        self.config = config
        self.engine = engine
        self.url = url
        self.run_id: int | None = None
        self.statuses: dict[str, int] = {}
        self.report_line = ""

    @property
    def written(self) -> int:
        return sum(self.statuses.values())

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call":
            return
        for name, value in report.user_properties:
            if name == RESULT_PROPERTY:
                self.write(json.loads(value))

    def write(self, record: dict[str, Any]) -> None:
        if self.run_id is None:
            settings: Settings = self.config.stash[_STATE]["settings"]
            info = run_info(
                pick_device(settings.device), _options_for_run(self.config), self.config.getoption("tier"),
                " ".join(sys.argv),
            )  # fmt: skip
            self.run_id = db.start_run(self.engine, info)
        db.add_result(self.engine, self.run_id, record)
        self.statuses[record["status"]] = self.statuses.get(record["status"], 0) + 1

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.run_id is not None:
            status = {0: "finished", 1: "finished", 2: "interrupted"}.get(int(exitstatus), "failed")
            db.finish_run(self.engine, self.run_id, status)
            self.render_report()

    def render_report(self) -> None:
        """``--report PATH``: the leaderboard of this run, once the run is finished (controller only)."""
        path = self.config.getoption("report")
        if path is None or self.run_id is None:
            return
        from pebench.report import render_report

        try:
            info = render_report(self.url, path, self.run_id)
            self.report_line = f"leaderboard -> {info.path} ({info.size_bytes / 1e6:.2f} MB, {info.seconds:.2f} s)"
        except PebenchError as err:
            self.report_line = f"leaderboard not written: {err}"

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        if not self.written:
            return
        statuses = ", ".join(f"{n} {s}" for s, n in sorted(self.statuses.items()))
        terminalreporter.write_sep("-", "pebench")
        terminalreporter.write_line(f"run {self.run_id}: {self.written} results ({statuses}) -> {self.url}")
        if self.report_line:
            terminalreporter.write_line(self.report_line)
