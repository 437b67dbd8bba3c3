"""The suite's reporting process (the controller under pytest-xdist, or the only process): it writes each case's
record to the database as its test report arrives, finishes the run, renders ``--report``, and prints the summary
with the reused results and the baseline regressions, which cases hand over as structured verdicts
(:class:`pebench.analysis.baseline.Regression`) in the test report, never as text to search.

A result that cannot be written is never a passed case: the record is written before any other plugin sees the
report, and when the write fails the report becomes a failure with one line saying why (:meth:`ResultWriter.
unwritten`), and the run ends ``failed``. The trained model's checkpoint was saved before
(:mod:`pebench.engine.cache`), so a rerun loads it instead of training again."""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import torch
from sqlalchemy.exc import SQLAlchemyError

from pebench.analysis import lr
from pebench.analysis.baseline import Regression
from pebench.case import Case
from pebench.engine.currency import GIVEN_KEY
from pebench.engine.device import pick_device
from pebench.engine.settings import FLAGS, dests
from pebench.errors import PebenchError
from pebench.plugins import load_entry_points, loaded
from pebench.records.record import ResultRecord
from pebench.status import RunStatus
from pebench.store.database import add_result, error_line, finish_run, safe_url, start_run
from pebench.store.lifecycle import HEARTBEAT_S, heartbeat, mark_interrupted
from pebench.store.provenance import run_info
from pebench.store.schema import utcnow
from pebench.suite.state import GIVEN_FLAGS, ONE_RATE_BECAUSE, SuiteState
from pebench.suite.summary import WHY, case_score, extension_lines, lite_lines, score_tables, why_lines

RESULT_PROPERTY = "pebench_result"
"""``record_property`` name of a case's :class:`ResultRecord` (JSON)."""
REGRESSION_PROPERTY = "pebench_regression"
"""``record_property`` name of a case's :class:`Regression` against the baseline (JSON)."""


def properties(report: pytest.TestReport, name: str) -> list[str]:
    return [value for key, value in report.user_properties if key == name]


def run_options(config: pytest.Config, state: SuiteState) -> dict[str, Any]:
    """The run's options as stored with it: those of the flags whose scope is ``run``
    (:func:`pebench.engine.settings.dests`), and what the session made of them."""
    opts = {n: config.getoption(n) for n in dests("run")}
    opts["seeds"] = str(state.seeds) if state.seeds.auto else state.seeds.count
    opts["torch_deterministic_algorithms"] = torch.are_deterministic_algorithms_enabled()
    opts["baseline_run"] = state.baseline.run_id if state.baseline is not None else None
    opts["keyword"] = config.option.keyword
    opts["markexpr"] = config.option.markexpr
    opts["numprocesses"] = getattr(config.option, "numprocesses", None)
    opts[GIVEN_KEY] = given_settings(config)
    if loaded():  # only with plugins: the options of other runs stay as they were (pebench merge compares them)
        opts["plugins"] = [p.spec for p in loaded()]
    if load_entry_points():
        opts["entry_points"] = [p.source for p in load_entry_points()]
    return opts


def given_settings(config: pytest.Config) -> list[str]:
    """The settings (:func:`~pebench.engine.settings.dests` ``setting``) the command gave, stored with the run: the
    others are at their defaults, which the currency of its results follows (:mod:`pebench.engine.currency`). A
    text flag given at its default value cannot be told from one not given, and counts as not given."""
    given = config.stash.get(GIVEN_FLAGS, set())
    return sorted(d for d in dests("setting") if d in given
                  and not (isinstance(FLAGS[d].options.get("default"), str)
                           and config.getoption(d) == FLAGS[d].options.get("default")))  # fmt: skip


WHY_NAMES = frozenset([*(name for name, _ in WHY), "base_model"])
"""The metrics the terminal summary keeps of each result: the diagnostics' means (:func:`why_lines`) and a second
phase's base model (:func:`extension_lines`)."""


class Heartbeat:
    """Renews the run's heartbeat every :data:`~pebench.store.lifecycle.HEARTBEAT_S` seconds from a daemon thread,
    so that other processes can tell a live run from one whose process is gone."""

    def __init__(self, engine: Any, run_id: int, every: float = HEARTBEAT_S) -> None:
        self.engine, self.run_id, self.every = engine, run_id, every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="pebench-heartbeat", daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(self.every):
            try:
                heartbeat(self.engine, self.run_id)
            except Exception:  # a busy or briefly unreachable database: the next beat tries again
                continue

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


class ResultWriter:
    """Writes each case's record to the database as its report arrives (reporting process only)."""

    def __init__(self, config: pytest.Config, state: SuiteState, engine: Any) -> None:
        self.config = config
        self.state = state
        self.settings = state.settings
        self.engine = engine
        self.url = state.db_url
        self.run_id: int | None = None
        self.launched = utcnow()
        """The session's start: the run's ``started_at`` (its row is written with the first result)."""
        self.heartbeat: Heartbeat | None = None
        self.statuses: dict[str, int] = {}
        self.records: list[ResultRecord] = []
        self.validation: dict[tuple[str, int], float | None] = {}  # (case id, seed) -> final val_1x
        self.halving: dict[tuple[str, int], str] = {}  # (case id, seed) -> metrics["lr_halving"]
        self.not_written: list[str] = []
        """One line per result the database refused (and for a run that could not be finished)."""
        self.report_line = ""

    @property
    def written(self) -> int:
        return sum(self.statuses.values())

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> Any:
        """Write the case's record before any other plugin (the terminal, pytest's count of failures) sees the
        report, so that a failed write turns it into a failure in time."""
        if report.when == "call":
            for value in properties(report, RESULT_PROPERTY):
                record = ResultRecord.from_json(value)
                try:
                    self.write(record)
                except Exception as err:  # the database refused the row, or went away: never a passed case
                    self.unwritten(report, record, err)
        return (yield)

    def write(self, record: ResultRecord) -> None:
        if self.run_id is None:
            info = run_info(pick_device(self.settings.device), run_options(self.config, self.state),
                            self.config.getoption("tier"), safe_url(" ".join(sys.argv)))  # fmt: skip
            mark_interrupted(self.engine)
            self.run_id = start_run(self.engine, {**info, "started_at": self.launched})
            self.heartbeat = Heartbeat(self.engine, self.run_id)
        add_result(self.engine, self.run_id, record)
        self.statuses[record.status] = self.statuses.get(record.status, 0) + 1
        if record.eval_length == record.train_length:  # a learning-rate sweep's choice (summary) reads these
            self.validation[(record.case_id, record.seed)] = lr.final_val(record.curve)
        if record.metrics.get("lr_halving"):
            self.halving[(record.case_id, record.seed)] = record.metrics["lr_halving"]
        # the summary needs the scores and the diagnostics' means only (why_lines)
        record.metrics = {k: v for k, v in record.metrics.items() if k in WHY_NAMES}
        record.curve = []
        self.records.append(record)

    def unwritten(self, report: pytest.TestReport, record: ResultRecord, err: Exception) -> None:
        """Turn ``report`` into a failure whose message is one line: which result was not written, why, and that
        the trained model is kept for a rerun."""
        why = error_line(err)
        if not isinstance(err, (SQLAlchemyError, PebenchError)):
            why = f"{type(err).__name__}: {why}"
        cache = self.settings.cache_dir
        kept = (f"its trained model stays in {cache}, so a rerun (e.g. with --reuse) does not train it again"
                if cache is not None else "no trained model is kept (--no-cache)")  # fmt: skip
        run = "the run ends failed" if self.run_id is not None else "no run row could be written either"
        line = (f"pebench: the result of {record.case_id} (seed {record.seed}) was not written to "
                f"{safe_url(self.url)}: {why}; {run}, and {kept}")  # fmt: skip
        self.not_written.append(line)
        if hasattr(report, "wasxfail"):  # a diverged case: its record is lost all the same
            del report.wasxfail
        report.longrepr = line if report.outcome != "failed" else f"{line}\n{report.longreprtext}"
        report.outcome = "failed"

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.heartbeat is not None:
            self.heartbeat.stop()
        if self.run_id is not None:
            done = {0: RunStatus.FINISHED, 1: RunStatus.FINISHED, 2: RunStatus.INTERRUPTED}
            status = RunStatus.FAILED if self.not_written else done.get(int(exitstatus), RunStatus.FAILED)
            try:
                finish_run(self.engine, self.run_id, status)
            except Exception as err:  # the database went away: say so in one line, the run stays "running"
                self.not_written.append(f"pebench: run {self.run_id} could not be marked {status} in "
                                        f"{safe_url(self.url)}: {error_line(err)}")  # fmt: skip
            self.render_report()

    def render_report(self) -> None:
        """``--report PATH``: the leaderboard of this run, once the run is finished."""
        path = self.config.getoption("report")
        if path is None or self.run_id is None:
            return
        from pebench.report.page import render_report

        points = sorted({r.point for r in self.records if r.point})
        if self.config.getoption("lr_sweep") is not None:
            points = []  # one page: each cell at its chosen rate (pebench.analysis.lr)
        pages = [(path, None)] if len(points) <= 1 else \
            [(str(Path(path).with_name(f"{Path(path).stem}-{p}{Path(path).suffix}")), p) for p in points]  # fmt: skip
        lines = []
        for page, point in pages:  # a sweep: one page per point (a page never ranks two points together)
            try:
                info = render_report(self.url, page, self.run_id, point, self.state.reference,
                                     self.config.getoption("allow_stale"))
                lines.append(f"leaderboard -> {info.path} ({info.size_bytes / 1e6:.2f} MB, {info.seconds:.2f} s)")
                lines += info.standing if point == pages[0][1] else []
            except PebenchError as err:
                lines.append(f"leaderboard not written: {err}")
        self.report_line = "\n".join(lines)

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        for line in self.not_written:
            terminalreporter.write_line(line, red=True)
        if not self.written:
            return
        statuses = ", ".join(f"{n} {s}" for s, n in sorted(self.statuses.items()))
        terminalreporter.write_sep("-", f"pebench: scores of run {self.run_id}")
        rates = config.getoption("lr_sweep")
        records = self.records
        if rates is not None:
            validation = {k: v for k, v in self.validation.items() if v is not None}
            records = lr.chosen_records(records, validation, self.halving)
        for line in score_tables(records, rates) + (lite_lines(records) if config.getoption("tier") == "lite" else []):
            terminalreporter.write_line(line)
        terminalreporter.write_line("(ID lengths | OOD lengths; * best of its column beyond the seed noise, unmarked "
                                    "when within it)")
        for line in why_lines(records) + extension_lines(records):
            terminalreporter.write_line(line)
        terminalreporter.write_line(protocol_line(config))
        terminalreporter.write_line(f"run {self.run_id}: {self.written} results ({statuses}) -> {safe_url(self.url)}")
        if self.report_line:
            for line in self.report_line.splitlines():
                terminalreporter.write_line(line)
        else:
            db = f" --db '{safe_url(self.url)}'" if "://" in self.url else ""
            terminalreporter.write_line(f"leaderboard: pebench report{db} --run {self.run_id} -o leaderboard.html")
        state = self.state
        if state.executor_summary:
            terminalreporter.write_line(state.executor_summary)
        if state.shard is not None:
            terminalreporter.write_line(f"pebench --shard {state.shard}: this run holds one part of the selected "
                                        "cases; join the parts with pebench merge")  # fmt: skip


def protocol_line(config: pytest.Config) -> str:
    """The run's learning-rate protocol in one line (docs/defaults.md)."""
    rates = config.getoption("lr_sweep")
    if rates is not None:
        return (f"protocol: each (encoding, task, seed) at the best of the learning rates {rates}, chosen by the "
                "validation at the training length (a model per rate; --lr-sweep off: one rate)")  # fmt: skip
    because = config.stash.get(ONE_RATE_BECAUSE, None)
    why = f" ({because} runs one rate)" if because else ""
    return (f"protocol: one learning rate, {config.getoption('lr'):g}, for every encoding{why}; the default protocol "
            "takes each cell at its best rate (docs/defaults.md)")  # fmt: skip


def report_teststatus(report: pytest.TestReport) -> tuple[str, str, tuple[str, dict[str, bool]]] | None:
    """``PASSED (accuracy 97.3%)`` under ``-v`` for a passed case (None for anything else)."""
    if report.when != "call" or not report.passed:
        return None
    for value in properties(report, RESULT_PROPERTY):
        return "passed", ".", (f"PASSED ({case_score(ResultRecord.from_json(value))})", {"green": True})
    return None


class RunSummary:
    """Counts reused results and collects baseline regressions for the terminal summary (reporting process only)."""

    def __init__(self, state: SuiteState) -> None:
        self.state = state
        self.results = 0
        self.reused = 0
        self.regressions: list[Regression] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call":
            return
        for value in properties(report, RESULT_PROPERTY):
            self.results += 1
            self.reused += bool(ResultRecord.from_json(value).reused_from)
        self.regressions += [Regression.from_json(v) for v in properties(report, REGRESSION_PROPERTY)]

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        if not self.results:
            return
        if config.getoption("reuse"):
            terminalreporter.write_line(f"pebench --reuse: {self.reused} of {self.results} results copied")
        baseline = self.state.baseline
        if baseline is not None:
            several = self.state.several_seeds
            what = ", ".join(Case.with_seed(r.case_id, r.seed) if several else r.case_id
                             for r in self.regressions) or "none"  # fmt: skip
            terminalreporter.write_line(f"pebench --baseline run {baseline.run_id}: regressed: {what}")
