"""The benchmark: one case per (encoding, task, evaluation length[, seed]), ids like ``alibi-k_back-L256``.

Each case trains the model for its (encoding, task, seed, config) or reuses it, evaluates at its length and hands
its record to the results database. A diverged model is a result, not a bug: it is recorded and the case is
reported as xfailed. With ``--seeds auto`` a seed above 0 runs only where the lower seeds left a verdict open
(:mod:`pebench.suite.adaptive`); otherwise it is skipped with the reason. A failure is a result too: an exception
in the case (its encoding's behavioural probe, training, evaluation) is recorded with a one-line message naming the
encoding, the task, where and the exception, and the case fails with that line (its traceback, kept with the
record, only under ``-v``); the other cases run on. With ``--baseline`` a case also fails when its score regressed
against the baseline run (the numbers are in the message).

Speed: training is timed with pytest-benchmark (``benchmark.pedantic``, one round, one iteration) in the one case
that actually trains its model -- the other lengths of that model, results copied by ``--reuse`` and models loaded
from a checkpoint train nothing and add no benchmark entry. The training throughput (tokens/s) goes into the
benchmark's ``extra_info`` and, independently of pytest-benchmark (which disables itself under xdist), into the
database.
"""

import pytest

from pebench.status import ResultStatus
from pebench.suite.plugin import REGRESSION_PROPERTY, RESULT_PROPERTY


# only the case that trains a model uses the benchmark fixture (see the module docstring)
@pytest.mark.filterwarnings("ignore:Benchmark fixture was not used")
def test_case(pebench_case, pebench_runner, pebench_baseline, pebench_seeds, benchmark, record_property, pytestconfig):
    seed_reason = None
    if pebench_seeds is not None:  # --seeds auto: a further seed only where the lower ones left a verdict open
        seed_reason = pebench_seeds.reason(pebench_case)
        if seed_reason is None:
            pytest.skip(f"decided after {pebench_case.seed} seed(s) (--seeds {pebench_seeds.plan})")
    benchmark.group = "training"
    record = pebench_runner.run(
        pebench_case, timer=lambda train: benchmark.pedantic(train, rounds=1, iterations=1, warmup_rounds=0)
    )
    if pebench_seeds is not None:
        record.metrics["seed_reason"] = seed_reason
        pebench_seeds.add(record)
    benchmark.extra_info.update(tokens_per_s=record.tokens_per_s, train_steps=record.train_steps, status=record.status)
    record_property(RESULT_PROPERTY, record.to_json())
    if record.status == ResultStatus.DIVERGED:
        pytest.xfail(f"diverged: {record.message}")
    if record.status == ResultStatus.ERROR:
        trace = record.metrics.get("traceback", "") if pytestconfig.option.verbose >= 1 else ""
        pytest.fail(f"{record.message}\n{trace}".rstrip(), pytrace=False)
    assert record.score is not None
    if pebench_baseline is not None:
        regression = pebench_baseline.check(record)
        if regression is not None:
            record_property(REGRESSION_PROPERTY, regression.to_json())
            pytest.fail(regression.message, pytrace=False)
