"""The stored training time of some results: each trained model once, whatever lengths and copies share it."""

from __future__ import annotations

import pandas as pd
import pytest

from pebench.analysis.training_time import duration_text, stored_training


def test_each_model_counts_once_with_its_stored_time():
    rows = pd.DataFrame([  # one model at three lengths (its other lengths carry its time), one at another rate
        {"encoding": "rope", "task": "sort", "train_length": 6, "seed": 0, "config_hash": "a", "train_time_s": 38.5}
        | {"eval_length": L} for L in (6, 12, 24)] + [
        {"encoding": "rope", "task": "sort", "train_length": 6, "seed": 0, "config_hash": "b", "train_time_s": None,
         "eval_length": 6},
        {"encoding": "rope", "task": "sort", "train_length": 6, "seed": 1, "config_hash": "a", "train_time_s": 41.2,
         "eval_length": 6}])  # fmt: skip
    models, seconds = stored_training(rows)
    assert models == 3 and seconds == pytest.approx(38.5 + 41.2)  # no stored time counts 0 s
    assert stored_training(rows.iloc[0:0]) == (0, 0.0)
    assert duration_text(426) == "7.1 CPU-minutes" and duration_text(204_120) == "56.7 CPU-hours"
