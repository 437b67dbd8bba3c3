"""Each encoding at its best learning rate (issue 30, items 2 and 4): the default protocol.

One learning rate for every encoding can fail one and flatter another; the synthetic-task suites this protocol
follows (Zoology, MAD) report each architecture at its best rate from a small sweep. Measured in pebench
(docs/defaults.md, issue 30 item 4): at the former shared rate 3e-3, 15 of 37 cells of ten tasks have another
verdict than at their best rate; at 1e-3, 5 of 39 (RoPE on parity; learned positions, sinusoidal and RoPE on
add_nocarry learn at 3e-3 only; NoPE on long_range_match only partly, at 1e-2). No single rate is fair, so the
suite's default trains every (encoding, task, seed) at each rate of :data:`GRID` and reports it at the best
(:func:`resolve`: ``--lr-sweep off``, an explicit ``--lr``, ``--sweep`` or ``--seeds auto`` run one rate instead).
``--lr-sweep V1,V2,...`` gives another grid. Each rate is a point, as with ``--sweep lr=...``
(``rope-k_back-L64-lr0.003``); every rate's results stay in the database, and the run is marked with the protocol
(``runs.options["lr_sweep"]``: the rates, or None for one rate).

Which rate a cell reports is chosen in distribution only: per (encoding, task, seed), the rate whose model has the
best *final validation at the training length* (the learning curve's last ``val_1x``: the task's metric on held-out
batches drawn apart from training and evaluation, :class:`pebench.engine.evaluation.Validation`), higher or lower by
the metric's direction; a tie goes to the lower rate. The out-of-distribution lengths being reported never take part
(tested with a case where they would pick another rate). The report of such a run shows every cell at its chosen
rate (:func:`chosen`) and says so, and so does the suite's closing summary (:func:`chosen_records`); ``pebench
compare`` refuses to compare runs of the two protocols.

Cost: one model per rate, 2x the single rate's CPU time with the default grid. ``--lr-halving`` trains every rate
for budget/k steps and only the best to the full budget (:mod:`pebench.suite.halving`): about two models per cell
whatever k, so it saves only with three rates or more; its choice is marked in the results and taken as is.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pebench import metrics
from pebench.case import Point
from pebench.errors import PebenchError
from pebench.store.load import point_column, points

if TYPE_CHECKING:
    import pandas as pd

GRID = (1e-3, 3e-3)
"""The rates of the default protocol and of ``--lr-sweep`` without a value. 1e-2 was left out: in the measurement of
issue 30 it was chosen in 3 of 43 choices, all on long_range_match, where nothing was learned at any rate but NoPE's
"partly" (``--lr-sweep 1e-3,3e-3,1e-2`` puts it back)."""

AXIS = "lr"
"""The sweep axis of the learning rate (``--sweep lr=...``; the default protocol's points ``lr0.001``, ``lr0.003``)."""

LEGACY_GRID = "0.001,0.003,0.01"
"""The grid of runs stored before the default protocol (``lr_sweep: ""``, the flag alone, meant this grid)."""

OFF = "off"
"""``--lr-sweep off``: one learning rate (``--lr``) for every encoding."""


def grid_text(given: str | None) -> str:
    """The ``--lr-sweep`` value as a ``lr=`` sweep: ``given`` (``V1,V2,...``), or :data:`GRID` for ``""``."""
    return given or ",".join(f"{v:g}" for v in GRID)


def resolve(given: str | None, one_rate_because: str | None) -> str | None:
    """The rates a suite run sweeps (``V1,V2,...``), or None for one learning rate: ``given`` is ``--lr-sweep``'s
    value (None when the flag is absent, ``""`` for the flag alone, :data:`OFF`, or the rates); without the flag the
    default protocol (:data:`GRID`) unless ``one_rate_because`` names what asks for one rate (an explicit ``--lr``,
    ``--sweep``, ``--seeds auto``)."""
    if given is not None and given.strip().lower() == OFF:
        return None
    if given is None:
        return None if one_rate_because else grid_text("")
    return canonical(checked_rates(given))


def checked_rates(given: str) -> str:
    """``--lr-sweep``'s rates as given (:data:`GRID` for ``""``), each a positive finite number, none twice; else a
    one-line error naming ``--lr-sweep`` and what it takes."""
    text = grid_text(given)
    seen: list[float] = []
    for raw in text.split(","):
        try:
            rate = float(raw)
        except ValueError:
            rate = float("nan")
        if not math.isfinite(rate) or rate <= 0 or rate in seen:
            why = "is given twice" if rate in seen else "is not a positive finite learning rate"
            raise PebenchError(f"--lr-sweep {given!r}: {raw.strip()!r} {why}; give rates such as 0.001,0.003 (V1,V2,"
                               "...), nothing for the default grid, or off for one rate (--lr)")  # fmt: skip
        seen.append(rate)
    return text


def canonical(rates: str) -> str:
    """``rates`` written as the default grid is (``1e-3,3e-3`` -> ``0.001,0.003``), so that one grid is one protocol
    however it was typed; as given when a value is no number (the sweep's check names it in one line)."""
    try:
        return ",".join(f"{float(v):g}" for v in rates.split(","))
    except ValueError:
        return rates


def protocol(options: Mapping[str, Any] | None) -> str | None:
    """The rates of a run's learning-rate sweep (from its stored options), or None for one learning rate."""
    value = (options or {}).get("lr_sweep")
    if value is None:
        return None
    return canonical(value) if value else LEGACY_GRID


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
    docstring; with ``--lr-halving`` and a ``metrics`` column, the rate marked chosen), with the columns
    ``lr_point`` (the point's text) and ``lr_rate`` (its rate, from the stored axes: :func:`rate_at`; None at a
    point of other axes). A cell without validation keeps no row (its rates are all shown by ``--point``)."""
    import pandas as pd

    if df.empty:
        return df.assign(lr_point=[], lr_rate=[])
    at = points(df)
    df = df.assign(lr_point=point_column(df), lr_rate=at.map(rate_at).astype(object))
    keep = []
    for _, g in df.groupby(["encoding", "task", "train_length", "seed"], sort=False):
        if "metrics" in g:  # --lr-halving: the rate its short runs chose, the one trained to the full budget
            marked = [m.get("lr_halving") == "chosen" if isinstance(m, Mapping) else False for m in g["metrics"]]
            if any(marked):
                keep.append(g[g["lr_point"] == g[marked]["lr_point"].iloc[0]])
                continue
        at_train = g[g["eval_length"] == g["train_length"]]
        metric = metrics.of_result(g["metric"].iloc[0], bool(g["higher_is_better"].iloc[0]))
        scored = [(validation[int(i)], at[k]) for k, i in at_train["id"].items() if int(i) in validation]
        if not scored:
            continue
        best = best_point(scored, metric.higher_is_better)
        keep.append(g[g["lr_point"] == str(best)])
    return pd.concat(keep) if keep else df.iloc[0:0]


SECOND_PHASE = frozenset({"ext", "pose", "scaffold"})
"""The axes of a second phase (:data:`pebench.engine.extension.AXES`): a rate's point with one of them is still that
rate's (an ``--extend`` run under the default protocol chooses each cell's rate as any run)."""


def rate_at(point: Point) -> float | None:
    """The learning rate of a point of the rate alone, or with a second phase's axis (``Point.of(lr="0.003")`` and
    ``Point.of(lr="0.003", ext="2x")`` -> 0.003, from a stored result's axes: :meth:`pebench.case.Point.of_stored`);
    None for any other point (none, or one of other axes)."""
    return float(point[AXIS]) if set(point) - SECOND_PHASE == {AXIS} else None


def best_point(scored: Iterable[tuple[float, Point]], higher_is_better: bool) -> Point:
    """The ``lrV`` point of the best final validation among ``scored`` ((validation, point) pairs), higher or lower
    by the metric's direction; a tie goes to the lower rate."""
    return max(scored, key=lambda vp: (vp[0] if higher_is_better else -vp[0], -(rate_at(vp[1]) or 0.0)))[1]


def mixed_text(grids: Iterable[str | None]) -> str:
    """The one-line reason results of several learning-rate protocols (``grids``, None for one rate) are refused."""
    names = "; ".join(sorted(protocol_text({"lr_sweep": g}) for g in grids))
    return f"the selected results mix learning-rate protocols ({names}), which are never ranked together"


def final_val(curve: Iterable[Mapping[str, Any]]) -> float | None:
    """The validation at the training length (``val_<metric>_1x``) of the last point of one model's learning curve
    (:attr:`pebench.records.record.ResultRecord.curve`) that has one; None without validation."""
    from pebench.records.record import curve_row

    last = None
    for point in map(curve_row, curve):
        if point["val_1x"] is not None and (last is None or point["step"] >= last[0]):
            last = (point["step"], float(point["val_1x"]))
    return None if last is None else last[1]


def chosen_records(records: Sequence[Any], validation: Mapping[tuple[str, int], float],
                   halving: Mapping[tuple[str, int], str] | None = None) -> list[Any]:  # fmt: skip
    """The suite's own records (:class:`pebench.records.record.ResultRecord`) of a learning-rate sweep at each
    (encoding, task, training length, seed)'s chosen rate, as :func:`chosen` does for stored results:
    ``validation`` maps (case id, seed) of a training-length record to its final validation, ``halving`` the
    ``metrics["lr_halving"]`` marks. Records at no ``lr`` point (none of a sweep) and cells without validation are
    kept as they are."""
    groups: dict[tuple[str, str, int, int], list[Any]] = {}
    for r in records:
        groups.setdefault((r.encoding, r.task, r.train_length, r.seed), []).append(r)
    keep: list[Any] = []
    for recs in groups.values():
        at = {id(r): Point.of_stored(r.axes) for r in recs}
        if any(rate_at(p) is None for p in at.values()) or len(set(at.values())) < 2:
            keep += recs
            continue
        marked = [at[id(r)] for r in recs if (halving or {}).get((r.case_id, r.seed)) == "chosen"]
        if marked:
            keep += [r for r in recs if at[id(r)] == marked[0]]
            continue
        higher = metrics.of_result(recs[0].metric, bool(recs[0].higher_is_better)).higher_is_better
        scored = [(validation[(r.case_id, r.seed)], at[id(r)]) for r in recs
                  if r.eval_length == r.train_length and (r.case_id, r.seed) in validation]  # fmt: skip
        if not scored:
            keep += recs
            continue
        best = best_point(scored, higher)
        keep += [r for r in recs if at[id(r)] == best]
    return keep


def at_chosen_rates(db_url: str, df: pd.DataFrame) -> pd.DataFrame:
    """``df`` (results of :func:`pebench.store.load.load`, with ``run_options``) with every cell of a learning-rate
    sweep at its chosen rate (:func:`chosen`, reading the learning curves from ``db_url``); results of one rate as
    they are. Results of both protocols, or of two grids, are one line of error: they are never ranked together."""
    if df.empty or "run_options" not in df:
        return df
    grids = {protocol(o) for o in df["run_options"]}
    if grids == {None}:
        return df
    if len(grids) > 1:
        raise PebenchError(f"{mixed_text(grids)}: select one run (--run RUN_ID)")
    from pebench.store import load as store_load
    from pebench.store.database import open_readonly

    engine = open_readonly(db_url)
    try:
        validation = final_validation(store_load.curve_points(engine, df["id"]))
    finally:
        engine.dispose()
    return chosen(df, validation).drop(columns=["lr_point", "lr_rate"])
