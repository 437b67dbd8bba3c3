"""``pebench run ARGS``: the pytest command line it runs, ``pytest -p pebench.suite.plugin --pyargs pebench.suite
ARGS`` in this process, from the current directory (results go where the suite's ``--db`` default says).

It leaves nothing in the user's directory but what it was asked for: pytest's cache provider (``.pytest_cache``) is
switched off unless the arguments (or ``$PYTEST_ADDOPTS``) name one of pytest's cache options, and pytest-benchmark's
``.benchmarks`` is removed again when nothing was saved in it (pebench's pytest entry point does that in every
session, and the suite's plugin where the entry point is off:
:func:`pebench.suite.autoload.leave_no_benchmark_storage`).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence

SUITE_ARGS = ("-p", "pebench.suite.plugin", "--pyargs", "pebench.suite",
              "-W", "ignore:Module already imported so cannot be rewritten; pebench:pytest.PytestAssertRewriteWarning")
"""What ``pebench run`` puts before the user's pytest options: the installed suite and its plugin. (pytest rewrites
the asserts of a ``pytest11`` plugin's package, and warns that this command already imported ``pebench``.)"""

NO_CACHE = ("-p", "no:cacheprovider")
CACHE_OPTIONS = ("--lf", "--last-failed", "--ff", "--failed-first", "--nf", "--new-first", "--cache-show",
                 "--cache-clear", "--lfnf", "--last-failed-no-failures", "--sw", "--stepwise", "--sw-skip",
                 "--stepwise-skip", "--sw-reset", "--stepwise-reset")  # fmt: skip
"""pytest's options that read or write its cache: given one, ``pebench run`` leaves the cache provider on."""


def asks_for_cache(args: Sequence[str]) -> bool:
    """Whether pytest arguments ``args`` use pytest's cache: one of :data:`CACHE_OPTIONS` (``--lf``,
    ``--cache-show=GLOB``), a ``-p`` naming the cache provider (``-p cacheprovider``, ``-p no:cacheprovider``:
    the user's own choice either way), or an ini override of ``cache_dir`` (``-o cache_dir=DIR``)."""
    for i, arg in enumerate(args):
        if arg.split("=", 1)[0] in CACHE_OPTIONS:
            return True
        if arg in ("-p", "-o", "--override-ini"):
            value = args[i + 1] if i + 1 < len(args) else ""
        elif arg.startswith(("-p", "-o", "--override-ini=")):
            value = arg.split("=", 1)[1] if arg.startswith("--") else arg[2:]
        else:
            continue
        if "cacheprovider" in value or value.strip().startswith("cache_dir"):
            return True
    return False


def pytest_args(args: Sequence[str], addopts: str | None = None) -> list[str]:
    """The whole pytest command line of ``pebench run ARGS``: :data:`SUITE_ARGS`, ``-p no:cacheprovider`` unless
    ``args`` or ``addopts`` (default ``$PYTEST_ADDOPTS``) ask for the cache (:func:`asks_for_cache`), then ``args``.
    ``--help`` keeps the cache provider, which writes nothing there, so that the help lists the cache options."""
    try:
        extra = shlex.split(os.environ.get("PYTEST_ADDOPTS", "") if addopts is None else addopts)
    except ValueError:  # unbalanced quotes: pytest says so itself
        extra = []
    keep = asks_for_cache([*extra, *args]) or any(a in ("-h", "--help") for a in [*extra, *args])
    return [*SUITE_ARGS, *(() if keep else NO_CACHE), *args]


def run_suite(args: Sequence[str]) -> int:
    """``pebench run ARGS``: :func:`pytest_args` run by pytest in this process, with pytest's exit status."""
    import pytest

    return int(pytest.main(pytest_args(args)))
