"""The suite's pytest wiring: command-line options, one parametrized case per (encoding, task, length, seed), one
:class:`~pebench.engine.runner.Runner` per process held in a typed :class:`SuiteState`, and the results database.

``suite/conftest.py`` imports this module, so the options exist when the suite is collected (``pytest suite``); an
installed pebench gets it through its ``pytest11`` entry point (:mod:`pebench.suite.autoload`, ``pytest --pyargs
pebench.suite``) or ``pebench run`` (``-p``). Plugins (``--plugin``, ini ``pebench_plugins``, entry points) load first.

Results travel from the test to the database through the test report: a case stores its
:class:`~pebench.records.record.ResultRecord` with ``record_property``, and the process that runs pytest's reporting
(the controller under pytest-xdist, or the only process) writes it (:mod:`pebench.suite.writer`). So only one
process ever writes, and no row is lost with ``-n 2``. The database is checked before anything is written, opened
for writing only in a session that runs cases, and disposed however the session ends (:mod:`pebench.suite.database`).

Regression options: ``--reuse`` gives the runner a :class:`~pebench.store.reuse.ReuseLookup`; ``--baseline
previous|RUN_ID`` is resolved once, in the controller, before any training (``previous``: the newest run already in
the database, i.e. the one before this session's), handed to xdist workers through ``workerinput``, and every
process checks each case as it finishes (:class:`pebench.analysis.baseline.Baseline`); ``--deterministic`` turns on
:func:`torch.use_deterministic_algorithms` (and sets ``CUBLAS_WORKSPACE_CONFIG``): on CPU the suite is
deterministic without it, on CUDA some kernels use atomic adds. The flag is recorded in the run's options.
"""

from __future__ import annotations

import contextlib
import gc
import os
import warnings
from pathlib import Path
from typing import Any, NoReturn

import pytest
import torch

from pebench import encodings, plugins, tasks
from pebench.analysis import lr
from pebench.analysis.baseline import Baseline
from pebench.analysis.lite import lite_tasks
from pebench.case import Case
from pebench.engine.device import pick_device
from pebench.engine.runner import Runner
from pebench.engine.settings import FLAGS, Settings, add_flags, check_values, dests, given_flags, tolerances
from pebench.engine.sweep import Sweep
from pebench.errors import PebenchError
from pebench.options import parse_assignments
from pebench.plugins import INI_OPTION
from pebench.registry import parse_names
from pebench.store.database import resolve_url
from pebench.suite.adaptive import AdaptiveSeeds, SeedPlan
from pebench.suite.autoload import leave_no_benchmark_storage
from pebench.suite.database import baseline, is_worker, open_database
from pebench.suite.halving import Halving
from pebench.suite.preflight import collected_lengths, preflight, report_options, with_extension
from pebench.suite.sharding import parse_shard
from pebench.suite.state import GIVEN_FLAGS, ONE_RATE_BECAUSE, STATE, SuiteState
from pebench.suite.writer import REGRESSION_PROPERTY, RESULT_PROPERTY, RunSummary, report_teststatus

# The objects alive once the imports above are done (torch's and SQLAlchemy's: some 250,000) live as long as
# the process. Freezing them takes them out of the cyclic collector's sight, so a full collection costs microseconds
# instead of 0.2-0.4 s -- pytest runs five when a session ends, automatic ones come during training -- and nothing a
# model computes changes.
gc.freeze()

__all__ = [
    "REGRESSION_PROPERTY",
    "RESULT_PROPERTY",
    "pebench_baseline",
    "pebench_runner",
    "pebench_seeds",
    "pebench_settings",
    "pytest_addoption",
    "pytest_collection_modifyitems",
    "pytest_collection_finish",
    "pytest_configure",
    "pytest_generate_tests",
    "pytest_report_teststatus",
    "pytest_sessionstart",
    "pytest_xdist_make_scheduler",
]


MARKERS = ("full: cases of the full tier (run with -m full or --tier full)",
           "quick: cases of the quick tier (the default)")  # fmt: skip


def _one_line_errors(parser: pytest.Parser) -> None:
    """pytest answers a bad argument of its own or of another plugin (``--benchmark-json`` into a read-only
    directory, which pytest-benchmark opens while the command line is parsed; ``--maxfail x``) with its usage block;
    in a suite session it is one line, as for the suite's own flags (:func:`~pebench.engine.settings.check_values`).
    Through pytest's ``Parser.optparser`` (pytest 9; elsewhere pytest's answer stays as it is), from the moment this
    plugin is loaded: for every argument under ``pebench run`` (its ``-p``), for those pytest parses after its initial
    conftests under ``pytest suite`` (``--benchmark-json`` is opened before)."""
    optparser = getattr(parser, "optparser", None)
    if optparser is None:
        return

    def error(message: str) -> NoReturn:
        raise pytest.UsageError(message)

    optparser.error = error


def pytest_addoption(parser: pytest.Parser) -> None:
    _one_line_errors(parser)
    # pytest-benchmark warns at start-up under -n N that its benchmarks are off; the suite times training itself and
    # shows pytest-benchmark's table only with --timing-table, so the warning is noise at the top of every -n run
    warnings.filterwarnings("ignore", message="Benchmarks are automatically disabled because xdist plugin is active")
    add_flags(parser.getgroup("pebench", "pebench benchmark suite").addoption, dests("suite"), deferred=True)
    parser.addini(INI_OPTION, "plugins to import, as --plugin (paths relative to this file)", type="args", default=[])
    add_flags(parser.getgroup("pebench-regression", "pebench regression runs").addoption, dests("regression"),
              deferred=True, tolerance={"help": FLAGS["tolerance"].help + ", for --baseline"},
              ppl_tolerance={"help": FLAGS["ppl_tolerance"].help + ", for --baseline"})  # fmt: skip


def _names(config: pytest.Config, option: str, registry: Any) -> list[str]:
    raw = config.getoption(option)
    # an unknown name raises UnknownNameError listing the valid names; an empty or repeated list is an error
    names = parse_names(raw, registry.get, option, registry.available()) if raw else registry.available()
    return lite_tasks(names) if option == "task" and config.getoption("tier") == "lite" else names


def _named_options(config: pytest.Config, option: str, registry: Any) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for item in config.getoption(option):
        name, sep, rest = item.partition(":")
        flag = FLAGS[option].flag
        if not sep:
            raise PebenchError(f"{flag} {item!r} must look like NAME:KEY=VALUE[,KEY=VALUE]")
        registry.get(name.strip())
        out.setdefault(name.strip(), {}).update(parse_assignments(rest))
    return out


def _settings(config: pytest.Config, plan: SeedPlan) -> Settings:
    cache = None
    if not config.getoption("no_cache"):
        cache = Path(config.getoption("cache_dir") or Path(config.rootpath) / ".pebench_cache")
    settings = Settings(
        **{name: config.getoption(name) for name in dests("setting")},
        cache_dir=cache,
        pack_seeds=Settings.packed_seeds(config.getoption("pack"), 1 if plan.auto else plan.count,
                                         config.getoption("device")),
        encoding_options=_named_options(config, "encoding_options", encodings),
        task_options=_named_options(config, "task_options", tasks),
    )  # fmt: skip
    settings.check()
    pick_device(settings.device)  # fail early on an unusable device
    return settings


def _share_cores(config: pytest.Config) -> None:
    """In an xdist worker, use this worker's share of the cores for torch's threads (unless ``OMP_NUM_THREADS`` says
    otherwise): N workers each running as many threads as there are cores oversubscribe the CPU, and every step
    slows down several times over."""
    if not is_worker(config) or os.environ.get("OMP_NUM_THREADS"):
        return
    workers = int(config.workerinput.get("workercount", 1))  # type: ignore[attr-defined]
    torch.set_num_threads(max(1, torch.get_num_threads() // workers))


def _describe(state: SuiteState, case: Case) -> dict[str, Any]:
    """The case's configuration; an encoding that cannot be built with these settings is a one-line error."""
    try:
        return state.runner.describe(case)
    except PebenchError:
        raise
    except (ValueError, TypeError, AssertionError, RuntimeError) as err:
        s = state.runner.models(case.point).settings
        raise PebenchError(
            f"encoding {case.encoding} cannot be built with --d-model {s.d_model} --heads {s.n_heads} (head dim "
            f"{s.d_model // s.n_heads}): {err}"
        ) from None


def _one_rate_because(config: pytest.Config, plan: SeedPlan) -> str | None:
    """What in this command asks for one learning rate instead of the default protocol (None: nothing)."""
    if "lr" in config.stash[GIVEN_FLAGS]:
        return f"--lr {config.getoption('lr'):g}"
    if config.getoption("sweep"):
        return "--sweep"
    if plan.auto:
        return f"--seeds {plan}"
    return None


def _sweeps(config: pytest.Config, settings: Settings, plan: SeedPlan) -> list[str]:
    """``--sweep``'s values, with the learning-rate sweep of the protocol as one more (over ``lr``;
    :mod:`pebench.analysis.lr`). Stores the protocol's rates (or None, one rate) as the ``lr_sweep`` option, which
    the run records."""
    sweeps = list(config.getoption("sweep"))
    given = config.getoption("lr_sweep")
    because = _one_rate_because(config, plan)
    rates = lr.resolve(given, because)
    if rates is not None and given is not None and because and because.startswith("--lr "):
        raise PebenchError(f"{because} trains every encoding at one rate and --lr-sweep at each of several: give one")
    config.option.lr_sweep = rates
    config.stash[ONE_RATE_BECAUSE] = because if given is None else None
    if rates is None:
        if config.getoption("lr_halving"):
            raise PebenchError("--lr-halving halves a learning-rate sweep: it cannot run with one learning rate "
                               f"({because or '--lr-sweep off'})")  # fmt: skip
        return sweeps
    if sweeps:
        raise PebenchError("--lr-sweep reports each cell at its best rate; run --sweep without it (one rate: "
                           "--lr-sweep off)")  # fmt: skip
    if plan.auto:
        raise PebenchError(f"--seeds {plan} decides seeds per (encoding, task), not per learning rate: give a number "
                           "of seeds with --lr-sweep")  # fmt: skip
    if settings.val_batches <= 0:
        raise PebenchError("the learning-rate sweep (the default protocol; --lr-sweep) chooses each cell's rate by "
                           "its validation at the training length: give --val-batches 1 or more, or --lr-sweep off")
    if config.getoption("lr_halving") and settings.scale != "tiny":
        raise PebenchError("--lr-halving sets the short runs' steps directly: run it at --scale tiny")
    return [f"lr={rates}"]


def pytest_configure(config: pytest.Config) -> None:
    """Validate every option before collection; the controller checks the database, then opens it (before any
    training). ``--help`` and ``--markers`` only show text: nothing is checked, opened or written."""
    for marker in MARKERS:  # also outside this repository (pytest --pyargs pebench.suite, pebench run)
        config.addinivalue_line("markers", marker)
    shows_text = config.getoption("help", False) or config.getoption("markers", False)
    leave_no_benchmark_storage(config)  # pytest-benchmark's .benchmarks stays only when something was saved in it
    if shows_text:
        return
    try:  # values converted first (one line for a bad one), then plugins: their names are valid below
        config.stash[GIVEN_FLAGS] = given_flags(config.option, dests("suite"))
        check_values(config.option, [*dests("suite"), *dests("regression")])
        plugins.load_session(config.getini(INI_OPTION), config.inipath.parent if config.inipath else config.rootpath,
                             config.getoption("pebench_plugins"), config.invocation_params.dir)  # fmt: skip
        _share_cores(config)
        if config.getoption("deterministic"):
            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
            torch.use_deterministic_algorithms(True)
        plan = SeedPlan.parse(config.getoption("seeds"))
        settings = _settings(config, plan)
        sweep = with_extension(config, Sweep.parse(_sweeps(config, settings, plan)))
        state = SuiteState(
            settings=settings,
            encodings=_names(config, "encoding", encodings),
            tasks=_names(config, "task", tasks),
            runner=Runner(settings, sweep=sweep),
            db_url=resolve_url(config.getoption("db"), Path(config.rootpath), write=True),
            tolerances=tolerances(config.getoption("tolerance"), config.getoption("ppl_tolerance")),
            shard=parse_shard(config.getoption("shard")) if config.getoption("shard") else None,
            seeds=plan,
        )
        if state.seeds.auto:
            if config.getoption("executor") == "ray" or state.shard is not None or is_worker(config) or \
                    getattr(config.option, "numprocesses", None):  # fmt: skip
                raise PebenchError(f"--seeds {state.seeds} adds seeds in order, each after the lower seeds of its "
                                   "task: run it in one process (no -n, --shard or --executor ray), or give a "
                                   "number of seeds")  # fmt: skip
            if sweep:
                raise PebenchError(f"--seeds {state.seeds} decides seeds per (encoding, task), not per sweep point: "
                                   "give a number of seeds with --sweep")  # fmt: skip
            state.adaptive = AdaptiveSeeds(state.seeds)
        # options are validated by building each selected encoding and task once (at every sweep point), and every
        # length to be collected is checked against the task's options (e.g. k_back:k=1000 makes length 64
        # impossible)
        for task_name in state.tasks:
            for enc_name in state.encodings:
                for point in sweep.points(enc_name, task_name):
                    task, extend = state.runner.task(task_name, point), state.runner.models(point).settings.extend
                    for length in collected_lengths(config, task, extend):
                        task.check_length(length)
                    _describe(state, Case(enc_name, task_name, task.train_length, point=point))
        parallel = getattr(config.option, "numprocesses", None) or is_worker(config)
        if config.getoption("executor") == "ray" and parallel:
            raise PebenchError("--executor ray trains on Ray workers; do not combine it with -n (pytest-xdist)")
        if is_worker(config):
            state.baseline = baseline(config, state)
        else:
            state.reference = report_options(config)
            open_database(config, state, lambda: preflight(config, state))
        config.stash[STATE] = state
        if not is_worker(config):
            config.pluginmanager.register(RunSummary(state), "pebench-run-summary")
    except PebenchError as err:
        raise pytest.UsageError(str(err)) from None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """One case per (encoding, task, length, seed). An encoding that needs task annotations its task does not
    provide (:meth:`pebench.engine.runner.Runner.not_applicable`) gives skipped cases with the one-line reason: they
    write no result, train nothing, and leave a selection of only such cases a passing run of skips."""
    if "pebench_case" not in metafunc.fixturenames:
        return
    state = metafunc.config.stash[STATE]
    seeds = state.seeds.count
    params = []
    for enc_name in state.encodings:
        for task_name in state.tasks:
            reason = state.runner.not_applicable(enc_name, task_name)
            for point in state.runner.sweep.points(enc_name, task_name):
                task, extend = state.runner.task(task_name, point), state.runner.models(point).settings.extend
                lengths = collected_lengths(metafunc.config, task, extend)
                quick = set(lengths if extend else task.eval_lengths("quick"))
                for length in lengths:
                    for seed in range(seeds):
                        case = Case(enc_name, task_name, length, seed, point)
                        marks = [pytest.mark.full]
                        if reason is not None:
                            marks.append(pytest.mark.skip(reason=reason))
                        if length in quick:
                            marks.append(pytest.mark.quick)
                        params.append(pytest.param(case, id=case.test_id(seeded=seeds > 1), marks=marks))
    if state.seeds.auto:  # seed-major: every lower seed of a task runs before a higher one is decided
        params.sort(key=lambda p: p.values[0].seed)
    metafunc.parametrize("pebench_case", params)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Quick tier (the default): drop full-tier-only lengths unless ``-m`` selects by marker. Then, with
    ``--shard I/N``, keep this shard's models of what is selected (after ``-k``/``-m``, hence ``trylast``)."""
    keep, drop = [], []
    quick_only = config.getoption("tier") != "full" and not config.option.markexpr
    for item in items:
        is_case = item.get_closest_marker("full") is not None
        (drop if quick_only and is_case and item.get_closest_marker("quick") is None else keep).append(item)
    state = config.stash.get(STATE, None)
    if state is not None and state.shard is not None:
        keep, other = _shard_items(state, keep)
        drop += other
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def _case_of(item: pytest.Item) -> Case | None:
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("pebench_case") if callspec is not None else None


def _runnable(state: SuiteState, case: Case | None) -> bool:
    """Whether ``case`` is a case that runs (not one skipped because its encoding does not apply to its task)."""
    return case is not None and state.runner.not_applicable(case.encoding, case.task) is None


def _shard_items(state: SuiteState, items: list[pytest.Item]) -> tuple[list[pytest.Item], list[pytest.Item]]:
    """(this shard's items, the others) of ``items``, split by model (see :mod:`pebench.suite.sharding`)."""
    from pebench.suite.sharding import assign, case_costs

    cases = [c for c in map(_case_of, items) if _runnable(state, c)]
    shards = assign(case_costs(state.runner, cases), state.shard.count)
    mine, other = [], []
    for item in items:
        case = _case_of(item)
        # a skipped case (its encoding does not apply to its task) costs nothing: shard 1 reports it
        keep = case is None or shards.get((case.encoding, case.task), 1) == state.shard.index
        (mine if keep else other).append(item)
    state.shard_models = sorted({m for m, i in shards.items() if i == state.shard.index})
    return mine, other


def pytest_collection_finish(session: pytest.Session) -> None:
    """Without xdist workers (a plain run, or ``--collect-only``): the models to train and the time they should take
    (:mod:`pebench.suite.estimate`; under ``-n`` the controller says it, :mod:`pebench.suite.scheduling`). With
    ``--executor ray``: train the selected cases' models on Ray before any case runs (see
    :mod:`pebench.suite.ray_executor`)."""
    config = session.config
    state = config.stash.get(STATE, None)
    distributed = config.getoption("numprocesses", None) and not config.getoption("collectonly")
    if state is not None and not is_worker(config) and not distributed:
        from pebench.suite.estimate import estimate_line, workers_of

        cases = [c for c in map(_case_of, session.items) if _runnable(state, c)]
        if cases:
            line = estimate_line(state.runner, cases, workers_of(config.getoption("numprocesses", None)))
            config.pluginmanager.get_plugin("terminalreporter").write_line(line)
    if config.getoption("executor") != "ray" or config.getoption("collectonly"):
        return
    from pebench.suite.ray_executor import train_models

    state = config.stash[STATE]
    cases = [c for c in map(_case_of, session.items) if _runnable(state, c)]
    try:
        state.executor_summary = train_models(state.runner, cases, config.getoption("ray_address")).summary()
    except PebenchError as err:
        raise pytest.UsageError(str(err)) from None


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    """Under ``-v`` each case's line carries its score."""
    return report_teststatus(report)


def pytest_sessionstart(session: pytest.Session) -> None:
    """pytest-benchmark's table of single training rounds is shown only with ``--timing-table`` (its other options,
    e.g. ``--benchmark-json``, work either way)."""
    bench = getattr(session.config, "_benchmarksession", None)
    if bench is not None and not session.config.getoption("timing_table"):
        bench.display = lambda terminalreporter: None


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under pytest-xdist (``load`` or ``loadgroup``): all cases of one model on one worker (see
    :mod:`pebench.suite.scheduling`)."""
    from pebench.suite.scheduling import DISTRIBUTIONS, ModelScheduling

    if config.getoption("dist", "no") not in DISTRIBUTIONS:
        return None
    return ModelScheduling(config, log)


@pytest.fixture(scope="session")
def pebench_settings(pytestconfig: pytest.Config) -> Settings:
    return pytestconfig.stash[STATE].settings


@pytest.fixture(scope="session")
def pebench_runner(pytestconfig: pytest.Config) -> Runner | Halving:
    """What runs this process's cases: its one runner (its in-memory cache shares models across lengths), with the
    progress bar shown past pytest's capture and, with ``--reuse``, the lookup of earlier results; with
    ``--lr-halving`` the :class:`~pebench.suite.halving.Halving` that wraps it."""
    state = pytestconfig.stash[STATE]
    runner = state.runner
    capman = pytestconfig.pluginmanager.getplugin("capturemanager")

    def progress_context() -> contextlib.AbstractContextManager[Any]:
        if capman is None or is_worker(pytestconfig):
            return contextlib.nullcontext()
        return capman.global_and_fixture_disabled()

    if is_worker(pytestconfig):
        runner.settings.progress = False
    runner.progress_context = progress_context
    if pytestconfig.getoption("reuse"):
        from pebench.store.reuse import ReuseLookup

        lookup = ReuseLookup(state.db_url, runner.device.type)
        pytestconfig.add_cleanup(lookup.close)
        runner.reuse = lookup
    # the sweep is the one lr axis (_sweeps)
    return Halving(runner, runner.sweep.points("", "")) if pytestconfig.getoption("lr_halving") else runner


@pytest.fixture(scope="session")
def pebench_seeds(pytestconfig: pytest.Config) -> AdaptiveSeeds | None:
    """With ``--seeds auto[:N]``, which seeds run (:class:`pebench.suite.adaptive.AdaptiveSeeds`); else None."""
    return pytestconfig.stash[STATE].adaptive


@pytest.fixture(scope="session")
def pebench_baseline(pytestconfig: pytest.Config) -> Baseline | None:
    """The :class:`pebench.analysis.baseline.Baseline` of ``--baseline`` (None without it)."""
    return pytestconfig.stash[STATE].baseline
