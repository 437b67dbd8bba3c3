"""pytest's entry point into pebench (``pytest11``): a session that collects the suite of an installed pebench
(``pytest --pyargs pebench.suite ...``, or a path inside the installed ``pebench/suite``) gets the suite's plugin
(:mod:`pebench.suite.plugin`: its options, parametrization and database) before pytest reads its command line.

Every other pytest session in the environment is left alone: no option added, nothing imported but this module (the
suite's options, ``--db``, ``--device`` and the rest, would otherwise clash with other projects' own). Inside the
repository, ``pytest suite`` gets the plugin from ``suite/conftest.py`` instead, and ``pebench run`` names it with
``-p``. ``-p no:pebench`` switches this entry point off.

One thing it does in every session: pytest-benchmark, which pebench installs, creates its storage directory
(``.benchmarks``) in the current directory of every pytest session, whether or not anything is benchmarked -- a
``pytest test_my_pe.py`` of a file ``pebench new`` wrote included. A storage directory that was not there before the
session and is still empty at its end is removed again (:func:`leave_no_benchmark_storage`); one that holds a saved
benchmark, or was there before, is kept.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest

SUITE_PACKAGE = "pebench.suite"
PLUGIN = "pebench.suite.plugin"
_CLEANUP = pytest.StashKey[bool]()


def targets_suite(args: Iterable[str], pyargs: bool, here: Path | None = None) -> bool:
    """Whether a session with these command-line ``args`` collects the packaged suite: ``pebench.suite`` (or a
    module in it) with ``--pyargs``, or a path at or inside the package's directory ``here``."""
    here = (here or Path(__file__).parent).resolve()
    for arg in args:
        target = str(arg).split("::")[0]
        if pyargs and (target == SUITE_PACKAGE or target.startswith(SUITE_PACKAGE + ".")):
            return True
        try:
            path = Path(target).resolve()
        except (OSError, RuntimeError, ValueError):
            continue
        if path == here or here in path.parents:
            return True
    return False


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    """Register the suite's plugin when the session collects the packaged suite (its ``pytest_addoption`` then
    runs before the full parse of the command line)."""
    known = early_config.known_args_namespace
    if targets_suite(known.file_or_dir or [], bool(known.pyargs)):
        early_config.pluginmanager.import_plugin(PLUGIN)


def leave_no_benchmark_storage(config: pytest.Config) -> None:
    """pytest-benchmark creates its storage directory (``.benchmarks`` in the current directory, or
    ``--benchmark-storage``) in every session it configures, ``--help`` and ``--collect-only`` included, but writes
    to it only when asked (``--benchmark-save``, ``--benchmark-autosave``): a storage directory that was not there
    before the session is removed again at its end when still empty. Called before pytest-benchmark's own
    ``pytest_configure`` (which runs last); a second call in one session (the suite's plugin) does nothing."""
    if config.stash.get(_CLEANUP, False):
        return
    config.stash[_CLEANUP] = True
    storage = config.getoption("benchmark_storage", None)
    if not isinstance(storage, str) or not storage.startswith("file://"):
        return
    path = Path(storage.removeprefix("file://")).expanduser().absolute()
    if not path.exists():
        config.add_cleanup(lambda: path.rmdir() if path.is_dir() and not any(path.iterdir()) else None)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Every session: pytest-benchmark's storage directory goes again when the session created it and saved nothing
    in it (:func:`leave_no_benchmark_storage`)."""
    leave_no_benchmark_storage(config)
