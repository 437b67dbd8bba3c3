"""The metric registry: what each metric means, its normalisation from the definition (numbers worked by hand), and
that every task and every consumer takes its metric from there."""

import math

import pytest

from pebench import metrics, tasks
from pebench.analysis.compare import threshold
from pebench.errors import ConfigError, UnknownNameError
from pebench.metrics import Tolerances


def test_registered_metrics_and_their_keys():
    assert metrics.available() == ["accuracy", "exact_match", "perplexity"]
    acc, em, ppl = (metrics.get(n) for n in ("accuracy", "exact_match", "perplexity"))
    assert (acc.key, em.key, ppl.key) == ("token_accuracy", "sequence_accuracy", "perplexity")
    assert acc.higher_is_better and em.higher_is_better and not ppl.higher_is_better
    assert (acc.tolerance, em.tolerance, ppl.tolerance) == ("absolute", "absolute", "relative")
    assert (em.unit, ppl.unit) == ("exact match %", "perplexity")
    assert em.display(0.25) == 25.0 and ppl.display(3.5) == 3.5
    with pytest.raises(UnknownNameError, match="unknown metric 'bleu'; valid metrics: accuracy, exact_match"):
        metrics.get("bleu")


def test_every_task_declares_a_registered_metric_and_scores_with_its_key():
    result = {"token_accuracy": 0.1, "sequence_accuracy": 0.2, "perplexity": 30.0}
    for name in tasks.available():
        task = tasks.build(name)
        m = metrics.get(task.metric)
        assert task.higher_is_better == m.higher_is_better
        assert task.score(result) == result[m.key]
    assert tasks.build("passkey").score(result) == 0.2  # exact match, not token accuracy


def test_normalise_from_the_definition():
    acc, ppl = metrics.get("accuracy"), metrics.get("perplexity")
    assert acc.normalise(0.55, 0.1) == pytest.approx(0.5)  # (0.55 - 0.1) / 0.9
    assert acc.normalise(0.6, 0.2) == pytest.approx(0.5)
    assert acc.normalise(0.05, 0.1) == 0.0  # below chance is clipped
    assert acc.normalise(1.0, 0.25) == 1.0
    assert acc.normalise(0.5, 1.0) is None and acc.normalise(float("nan"), 0.1) is None
    assert ppl.normalise(16.0, 256.0) == pytest.approx(0.5)  # 1 - ln 16 / ln 256
    assert ppl.normalise(math.e, math.e**4) == pytest.approx(0.75)
    assert ppl.normalise(1.0, 256.0) == 1.0
    assert ppl.normalise(64.0, 0.01, vocab_size=4096) == pytest.approx(0.5)  # 1 - ln 64 / ln 4096
    assert ppl.normalise(300.0, 256.0) == 0.0  # worse than uniform is clipped


def test_a_stored_metric_this_version_does_not_know_keeps_its_direction():
    m = metrics.of_result("bleu", True)
    assert m.higher_is_better and m.tolerance == "absolute" and m.percent
    m = metrics.of_result(None, False)
    assert m.name == "perplexity" and m.relative


def test_tolerances_follow_the_metric():
    tol = Tolerances(accuracy=0.03, perplexity=0.1)
    assert threshold(metrics.get("exact_match"), 0.9, tol) == 0.03
    assert threshold(metrics.get("perplexity"), 20.0, tol) == pytest.approx(2.0)
    assert tol.describe(metrics.get("perplexity")) == "10% relative"
    with pytest.raises(ConfigError, match="accuracy must be a non-negative number"):
        Tolerances(accuracy=-1)
