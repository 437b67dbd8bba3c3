"""Wires the benchmark suite into pytest: options (--db, --steps, --tier, ...), one case per
(encoding, task, length, seed), and the results database. The logic lives in :mod:`pebench.pytest_plugin`."""

from pebench.pytest_plugin import *  # noqa: F403
