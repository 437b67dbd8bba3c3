"""The benchmark: one case per (encoding, task, evaluation length[, seed]), ids like ``alibi-k_back-L256``.

Each case trains the model for its (encoding, task, seed, config) or reuses it, evaluates at its length and hands
its record to the results database. A diverged model is a result, not a bug: it is recorded and the case is
reported as xfailed. Any other error is recorded with its message and the case fails.
"""

import json

import pytest

from pebench.pytest_plugin import RESULT_PROPERTY


def test_case(pebench_case, pebench_runner, record_property):
    record = pebench_runner.run(pebench_case)
    record_property(RESULT_PROPERTY, json.dumps(record))
    if record["status"] == "diverged":
        pytest.xfail(f"diverged: {record['message']}")
    if record["status"] == "error":
        pytest.fail(f"{pebench_case.id}: {record['message']}\n{record['metrics'].get('traceback', '')}")
    assert record["score"] is not None
