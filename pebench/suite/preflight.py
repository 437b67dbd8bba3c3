"""The suite's preflight (issue 70): every check a run can make before training, run once in the controller after
the options are validated and before the first model -- so that what would fail after the CPU-hours are spent, or
as a traceback in every case, fails at once in one line (pytest's usage error, exit status 4) with nothing written:

* the database is writable: a real write in a transaction that is rolled back, on SQLite and PostgreSQL
  (:func:`pebench.store.writable.check_database`; a read-only file or role, a read-only transaction);
* the checkpoint directory (``--cache-dir``, default ``<root>/.pebench_cache``) and the output file ``--report`` are
  writable: a probe file created and removed (:mod:`pebench.store.writable`);
* ``--with-reference`` can be joined with this run: its protocol and configuration, as the page will join them
  (:func:`pebench.analysis.reference.check_joinable`), else the page would be refused after training;
* every encoding from outside pebench (a plugin file or module, an entry point, a class defined in a conftest)
  passes the cheap part of the conformance kit: the shapes and dtypes of its hooks on a batch of two at the training
  length, at the run's settings (:func:`pebench.testing.shapes.check_hook_shapes`), naming the plugin file, the hook
  and the expected shape.

It also holds the checks of ``--report``'s companions (:func:`report_options`). ``--benchmark-json``: pytest-benchmark
up to 5.2 opens the file itself while pytest parses the command line, before any of this (under ``pebench run`` a file
it cannot open is one line all the same, :func:`pebench.suite.plugin._one_line_errors`); from 5.3 it keeps the path
and writes the file at the end, so the preflight checks it as ``--report``'s.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import torch

from pebench.case import Case, Point
from pebench.engine import extension
from pebench.engine.sweep import Sweep
from pebench.errors import PebenchError
from pebench.store.writable import check_database, check_directory, check_file
from pebench.suite.state import SuiteState

if TYPE_CHECKING:
    import pandas as pd

PROBE_BATCH = 2
"""Samples of the batch a plugin's hooks are checked on."""


def collected_lengths(config: pytest.Config, task: Any, extend: float | None = None) -> list[int]:
    """The lengths the suite collects for ``task``: the quick tier's, or every length with ``--tier full`` or any
    ``-m`` (the Chomsky tasks have hundreds of full-tier lengths each: a quick run never generates them); at a point
    of ``--extend F`` (``extend``), L, F*L and 2F*L whatever the tier (:func:`pebench.engine.extension.lengths`)."""
    if extend:
        extension.check(task, extend)  # a length the task cannot generate, or beyond the position tables: one line
        return extension.lengths(task, extend)
    every_length = config.getoption("tier") == "full" or bool(config.option.markexpr)
    return task.eval_lengths("full") if every_length else task.eval_lengths("quick")


def with_extension(config: pytest.Config, sweep: Sweep) -> Sweep:
    """``sweep`` with the extension axis of ``--extend F`` (:func:`pebench.engine.extension.with_axis`), after its
    companions are checked, one line each before anything runs: ``--pose`` and the phase's flags need it; it trains
    with the local executor and one learning rate per case (not ``--lr-halving``). ``--diagnostics-run`` needs the
    diagnostics and the from-scratch protocol."""
    if config.getoption("diagnostics_run"):
        off = [f for f, bad in (("--no-diagnostics", not config.getoption("diagnostics")),
                                ("--extend", config.getoption("extend") is not None),
                                ("--scaffold", config.getoption("scaffold") is not None)) if bad]  # fmt: skip
        if off:
            raise PebenchError(f"--diagnostics-run measures the diagnostics of from-scratch cells: run it without "
                               f"{off[0]}")  # fmt: skip
    if config.getoption("scaffold") is not None:
        if config.getoption("extend") is not None:
            raise PebenchError("--scaffold and --extend are two second phases: give one")
        if config.getoption("executor") == "ray" or config.getoption("lr_halving"):
            raise PebenchError("--scaffold continues each trained model: run it without --executor ray or --lr-halving")
        return extension.with_axis(sweep, None, scaffold=config.getoption("scaffold"))
    if config.getoption("extend") is None:
        given = [f for f, d in (("--pose", "pose"), ("--extend-steps", "extend_steps")) if config.getoption(d)]
        if given:
            raise PebenchError(f"{given[0]} sets the fine-tune of --extend F: give --extend too")
        return sweep
    if config.getoption("executor") == "ray":
        raise PebenchError("--extend fine-tunes with the local executor: run it without --executor ray")
    if config.getoption("lr_halving"):
        raise PebenchError("--extend continues each trained model: run it without --lr-halving")
    return extension.with_axis(sweep, config.getoption("extend"), config.getoption("pose"))


def report_options(config: pytest.Config) -> str | None:
    """Check ``--report``'s companions; the reference database of ``--with-reference`` (None without it), checked
    for freshness (:func:`pebench.analysis.reference.check_fresh`)."""
    report = config.getoption("report")
    if report is not None:
        parent = Path(report).expanduser().resolve().parent
        if Path(report).is_dir() or not parent.is_dir():
            raise PebenchError(f"--report {report!r}: give a file name in an existing directory")
    if config.getoption("with_reference") is None:
        if config.getoption("allow_stale"):
            raise PebenchError("--allow-stale is about the reference results: give --with-reference [URL] too")
        return None
    if report is None:
        raise PebenchError("--with-reference puts the run beside the reference results on the --report page: give "
                           "--report PATH too (or run pebench report --with-reference afterwards)")  # fmt: skip
    from pebench.analysis.reference import check_fresh, open_reference, reference_url
    from pebench.store.database import safe_url
    from pebench.store.migrate import inspect_schema

    url = reference_url(config.getoption("with_reference"))
    engine = open_reference(url, check=False)  # read-only: the shipped file of a read-only install too
    try:
        with engine.connect() as conn:
            current = inspect_schema(conn).kind == "current"
    finally:
        engine.dispose()
    if not current:
        raise PebenchError(f"--with-reference {safe_url(url)}: not a pebench results database of this version "
                           "(pebench db status --db URL says why)")  # fmt: skip
    if not config.getoption("allow_stale"):
        check_fresh(url)
    return url


def preflight(config: pytest.Config, state: SuiteState) -> None:
    """Every check of the module docstring, in order; the first failure is a one-line
    :class:`~pebench.errors.PebenchError`. Nothing is left behind: probe files are removed, database writes rolled
    back."""
    check_database(state.db_url)
    cache = state.settings.cache_dir
    if cache is not None:
        check_directory(cache, "--cache-dir" if config.getoption("cache_dir") else "--cache-dir (default)")
    report = config.getoption("report")
    if report is not None:
        check_file(report, "--report")
    bench_json = getattr(config.option, "benchmark_json", None)
    if bench_json is not None and not hasattr(bench_json, "write"):  # a path from pytest-benchmark 5.3 on (required)
        check_file(str(bench_json), "--benchmark-json")
    if state.reference is not None:
        _check_reference(config, state)
    _check_outside_encodings(state)


def _planned(config: pytest.Config, state: SuiteState, point: Point | None) -> pd.DataFrame:
    """The rows this run will store, as the page reads them (encoding, task, lengths, configuration), at sweep
    point ``point`` (None: each pair's first point, a learning-rate sweep's page comparing cells without the rate)."""
    import pandas as pd

    rows = []
    for enc in state.encodings:
        for name in state.tasks:
            if state.runner.not_applicable(enc, name) is not None:
                continue
            for p in state.runner.sweep.points(enc, name)[:1] if point is None else [point]:
                task = state.runner.task(name, p)
                described = state.runner.describe(Case(enc, name, task.train_length, point=p))
                rows += [{"encoding": enc, "task": name, "train_length": task.train_length, "eval_length": length,
                          "config": described} for length in collected_lengths(config, task)]  # fmt: skip
    return pd.DataFrame(rows, columns=["encoding", "task", "train_length", "eval_length", "config"])


def _check_reference(config: pytest.Config, state: SuiteState) -> None:
    """The page's join of this run with ``--with-reference``, found empty before training rather than after: one
    page per sweep point (each must join), one page for a learning-rate sweep."""
    from pebench.analysis import lr
    from pebench.analysis.reference import check_joinable

    rates = lr.protocol({"lr_sweep": config.getoption("lr_sweep")})
    sweep = state.runner.sweep
    points = [None] if rates is not None or not sweep else sorted(
        {p for e in state.encodings for t in state.tasks for p in sweep.points(e, t)})  # fmt: skip
    for point in points:
        check_joinable(state.reference or "", _planned(config, state, point), rates,
                       f" (sweep point {point})" if point else "")  # fmt: skip


def _check_outside_encodings(state: SuiteState) -> None:
    """Each selected encoding that is not built in, through the shape check of its hooks on a batch of
    :data:`PROBE_BATCH` at its first task's training length, at the run's settings; any failure of that forward pass
    is one line naming its source."""
    from pebench.encodings.registry import ENCODINGS
    from pebench.registry import BUILT_IN
    from pebench.testing.shapes import check_hook_shapes

    for enc in state.encodings:
        source = ENCODINGS.source(enc)
        name = next((t for t in state.tasks if state.runner.not_applicable(enc, t) is None), None)
        if source == BUILT_IN or name is None:
            continue
        point = state.runner.sweep.points(enc, name)[0]
        task = state.runner.task(name, point)
        try:
            model = state.runner.build_model(Case(enc, name, task.train_length, point=point))
            batch = task.sample(PROBE_BATCH, task.train_length, torch.Generator().manual_seed(0), "train")
            check_hook_shapes(model, batch, source)
        except PebenchError:
            raise
        except Exception as err:  # the plugin's own code failed: one line, before any training
            first = (str(err).strip().splitlines() or [""])[0]
            raise PebenchError(f"{source}: encoding {enc} fails on a batch of {PROBE_BATCH} of task {name} at length "
                               f"{task.train_length}: {type(err).__name__}: {first}") from None  # fmt: skip
