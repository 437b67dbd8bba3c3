"""``--lr-sweep``: each encoding at its best learning rate (issue 30, item 2).

One learning rate for every encoding can fail one and flatter another; the synthetic-task suites this protocol
follows (Zoology, MAD) report each architecture at its best rate from a small sweep. ``--lr-sweep [V1,V2,...]``
(default :data:`GRID`) trains every (encoding, task, seed) at every rate, as ``--sweep lr=...`` does (each rate is
a point, ``rope-k_back-L64-lr0.003``, and every rate's results stay in the database), and the run is marked with the
protocol (``runs.options["lr_sweep"]``).

Which rate a cell reports is chosen in distribution only: per (encoding, task, seed), the rate whose model has the
best *final validation at the training length* (the learning curve's last ``val_1x``: the task's metric on held-out
batches drawn apart from training and evaluation, :class:`pebench.engine.evaluation.Validation`), higher or lower by
the metric's direction; a tie goes to the lower rate. The out-of-distribution lengths being reported never take part
(tested with a case where they would pick another rate). The report of such a run shows every cell at its chosen
rate (:func:`chosen`) and says so; ``pebench compare`` refuses to compare runs of the two protocols.

Cost: the full sweep, one model per rate (3x the single rate's CPU time with the default grid), or with
``--lr-halving`` about two models per cell (:mod:`pebench.suite.halving`: every rate for budget/k steps, the best
trained to the full budget), whose choice is marked in the results and taken as is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from pebench import metrics
from pebench.case import point_of
from pebench.errors import PebenchError

GRID = (1e-3, 3e-3, 1e-2)
"""The default rates of ``--lr-sweep`` (around the one default, 3e-3)."""


def grid_text(given: str | None) -> str:
    """The ``--lr-sweep`` value as a ``lr=`` sweep: ``given`` (``V1,V2,...``), or :data:`GRID` for ``""``."""
    return given or ",".join(f"{v:g}" for v in GRID)


def protocol(options: Mapping[str, Any] | None) -> str | None:
    """The rates of a run's ``--lr-sweep`` (from its stored options), or None for one learning rate."""
    value = (options or {}).get("lr_sweep")
    return None if value is None else grid_text(value)


def protocol_text(options: Mapping[str, Any] | None) -> str:
    rates = protocol(options)
    return "one learning rate" if rates is None else f"the best learning rate of {rates} per cell"


def check_same_protocol(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None, what: str) -> None:
    """A one-line error when runs with options ``a`` and ``b`` differ in protocol (never ranked together)."""
    if protocol(a) != protocol(b):
        raise PebenchError(f"{what} differ in protocol ({protocol_text(a)} vs {protocol_text(b)}): their results "
                           "are never compared or ranked together")  # fmt: skip


def final_validation(curves: Iterable[tuple[int, int, float | None, float | None, float | None]]) -> dict[int, float]:
    """Result id -> the ``val_1x`` of its last curve point that has one (from
    :func:`pebench.store.load.curve_points`)."""
    last: dict[int, tuple[int, float]] = {}
    for result_id, step, _loss, val_1x, _val_2x in curves:
        if val_1x is not None and (result_id not in last or step >= last[result_id][0]):
            last[int(result_id)] = (int(step), float(val_1x))
    return {rid: v for rid, (_, v) in last.items()}


def chosen(df: pd.DataFrame, validation: Mapping[int, float]) -> pd.DataFrame:
    """The rows of ``df`` (one ``--lr-sweep`` run) at each (encoding, task, seed)'s chosen rate (see the module
    docstring; with ``--lr-halving`` and a ``metrics`` column, the rate marked chosen), with the column
    ``lr_point``. A cell without validation keeps no row (its rates are all shown by ``--point``)."""
    if df.empty:
        return df.assign(lr_point=[])
    df = df.assign(lr_point=df["case_id"].map(point_of))
    keep = []
    for _, g in df.groupby(["encoding", "task", "train_length", "seed"], sort=False):
        if "metrics" in g:  # --lr-halving: the rate its short runs chose, the one trained to the full budget
            marked = [m.get("lr_halving") == "chosen" if isinstance(m, Mapping) else False for m in g["metrics"]]
            if any(marked):
                keep.append(g[g["lr_point"] == g[marked]["lr_point"].iloc[0]])
                continue
        at_train = g[g["eval_length"] == g["train_length"]]
        metric = metrics.of_result(g["metric"].iloc[0], bool(g["higher_is_better"].iloc[0]))
        scored = [(validation[int(r.id)], r.lr_point) for r in at_train.itertuples() if int(r.id) in validation]
        if not scored:
            continue
        rate = lambda point: float(point.removeprefix("lr"))  # noqa: E731
        best = max(scored, key=lambda vp: (vp[0] if metric.higher_is_better else -vp[0], -rate(vp[1])))[1]
        keep.append(g[g["lr_point"] == best])
    return pd.concat(keep) if keep else df.iloc[0:0]
