"""What retraining some stored results would take, read from the training time their models stored.

A trained model's results at several evaluation lengths (and a copy of it made by ``--reuse``) all carry that
model's ``train_time_s``; counted once per model (:data:`pebench.store.load.MODEL_KEY`: encoding, task, training
length, seed and configuration, so each learning rate and sweep point is a model of its own), as the page's header
counts "training time" (:func:`pebench.report.header.header_info`) and ``studies/scale2/answer.py`` its CPU-hours.
``pebench rebuild --dry-run`` and ``pebench guard --dry-run`` say their cost with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pebench.store.load import MODEL_KEY

if TYPE_CHECKING:
    import pandas as pd


def stored_training(rows: pd.DataFrame) -> tuple[int, float]:
    """(models, seconds): the distinct trained models among ``rows`` (results with the columns of
    :data:`~pebench.store.load.MODEL_KEY` and ``train_time_s``) and the sum of their stored training times, each
    model once (a result without a stored time counts 0 s)."""
    if rows.empty:
        return 0, 0.0
    models = rows.drop_duplicates(list(MODEL_KEY))
    return len(models), float(models["train_time_s"].fillna(0).sum())


def duration_text(seconds: float) -> str:
    """``61.2 CPU-hours`` from an hour on, ``7.4 CPU-minutes`` below it: stored training time as said to a reader
    (the reference's models were trained one thread each, so its seconds are CPU-seconds)."""
    return f"{seconds / 3600:,.1f} CPU-hours" if seconds >= 3600 else f"{seconds / 60:.1f} CPU-minutes"
