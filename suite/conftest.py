"""Wires the benchmark suite into pytest: options (--db, --steps, --tier, ...), one case per
(encoding, task, length, seed), and the results database. The logic lives in :mod:`pebench.suite.plugin`."""

from pebench.suite.plugin import *  # noqa: F403
