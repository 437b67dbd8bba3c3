"""Everything a page shows, read in one pass (issue 87, item 3): the report's one way into a results database.

:func:`load_page` opens the database once and returns a :class:`PageData`: the selected rows with their JSON columns
(run selection, sweep point, a learning-rate protocol's chosen rates), the previous comparable rows, the runs and the
runs shown (their commands masked), the runs set aside as another model size with their rows, the learning curves of
the models shown, and with a reference the join (:func:`pebench.analysis.reference.join`, its staleness computed here
from the stored and shipped fingerprints) with its own curves. The report's views are functions of what it returns:
they read no database and compute no staleness. ``pebench table`` reads the same (its results' digest from
:attr:`PageData.df`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from pebench.analysis import across_scale, lr
from pebench.analysis.currency import run_settings_of
from pebench.analysis.reference import Joined, join, protocol_split
from pebench.analysis.sweeps import one_point, points
from pebench.errors import PebenchError
from pebench.records.frame import curve_owners, point_column
from pebench.store import load as store_load
from pebench.store.database import open_readonly, resolve_run_id, safe_url
from pebench.store.fingerprints import load_fingerprints

Curves = dict[int, list[tuple[Any, ...]]]
"""Result id -> its learning curve's points ``(step, loss, val_1x, val_2x)`` in the order stored."""


class ReportError(PebenchError):
    """Bad input to the report (run selection, output path)."""


@dataclass
class Reference:
    """The reference results joined with a page's rows (``--with-reference``)."""

    url: str
    """The reference's URL, its password masked."""
    joined: Joined
    curves: Curves
    """The learning curves of the models of ``joined.rows`` (the result carrying each one's: :func:`curve_owners`)."""


@dataclass
class PageData:
    """What :func:`load_page` read: all a page needs."""

    db_url: str
    """The database's URL, its password masked."""
    df: pd.DataFrame
    """Every result of the database, without its JSON columns."""
    runs: list[dict[str, Any]]
    """Every run of the database (commands masked)."""
    run_rows: list[dict[str, Any]]
    """The runs the page shows."""
    sel: pd.DataFrame
    """The rows shown, with their JSON: one sweep point (:func:`one_point`), or each cell at its chosen rate."""
    every_point: pd.DataFrame
    """The rows shown at every sweep point and rate (with their JSON where the page reads them: a learning-rate
    protocol page, or several sweep points)."""
    rates: str | None
    """The learning-rate protocol's rates of an ``--lr-sweep`` run shown whole; None otherwise."""
    sizes: pd.DataFrame
    """With ``--run all``: the rows (with their JSON) of the runs at another model size (:func:`set_aside_sizes`)."""
    size_runs: list[dict[str, Any]]
    prev: pd.DataFrame = field(default_factory=pd.DataFrame)
    """The previous comparable rows of ``sel`` for the deltas (:func:`previous_comparable`; none for ``--run all``)."""
    superseded: int = 0
    """With ``--run all``: the results not shown, superseded by a later one of their case."""
    curves: Curves = field(default_factory=dict)
    """The learning curves of the models of ``sel``."""
    reference: Reference | None = None
    choice: int | str = "latest"
    """The run selection: an id, ``latest``, ``previous`` or ``all``."""
    point: str | None = None
    """The sweep point shown (``--point``)."""
    extension: pd.DataFrame = field(default_factory=pd.DataFrame)
    """The rows (with their JSON) of the runs that continued trained models (``--extend``, :func:`set_aside_runs`),
    shown in their own section, never ranked with the from-scratch protocol; or the page's own rows when it shows
    such a run alone."""
    diagnostics: pd.DataFrame = field(default_factory=pd.DataFrame)
    """With ``--run all``: the rows (with their JSON) of the runs that measured diagnostics of cells ranked in other
    runs (``--diagnostics-run``, :func:`diagnostics_run`), read by the Why section and the mechanism findings only."""


def select(df: pd.DataFrame, run_ids: list[int], run: int | str) -> tuple[pd.DataFrame, list[int]]:
    """The rows to show and the run ids they come from. ``all``: the latest result of every (encoding, task,
    train length, eval length, seed, sweep point) across runs; otherwise the rows of the one resolved run."""
    if run == "all":
        if df.empty:
            return df, []
        key = ["encoding", "task", "train_length", "eval_length", "seed", "point"]  # the sweep point too
        sel = df.assign(point=point_column(df)).sort_values("id").drop_duplicates(key, keep="last")
        return sel, sorted(int(r) for r in sel["run_id"].unique())
    return df[df["run_id"].isin(run_ids)], run_ids


def previous_comparable(df: pd.DataFrame, sel: pd.DataFrame) -> pd.DataFrame:
    """For each config hash in ``sel``, the rows of the latest earlier run that holds that config hash."""
    if sel.empty:
        return sel
    first = int(sel["run_id"].min())
    earlier = df[(df["run_id"] < first) & df["config_hash"].isin(set(sel["config_hash"]))]
    if earlier.empty:
        return earlier
    latest = earlier.groupby("config_hash")["run_id"].transform("max")
    return earlier[earlier["run_id"] == latest]


def set_aside_sizes(sel: pd.DataFrame, run_rows: list[dict[str, Any]]
                    ) -> tuple[pd.DataFrame, pd.DataFrame, list[dict[str, Any]], list[dict[str, Any]]]:  # fmt: skip
    """``sel`` without the rows of the runs that swept only the model's size
    (:func:`pebench.analysis.across_scale.size_sweep`), those rows, and the runs of each; nothing is set aside when
    nothing else would remain (a page of such a run alone shows its sweep as any other)."""
    return set_aside_runs(sel, run_rows, lambda options: across_scale.size_sweep(options))


def extended(options: dict[str, Any] | None) -> bool:
    """Whether a run continued trained models (``--extend``, ``--scaffold``: :mod:`pebench.engine.extension`)."""
    return bool((options or {}).get("extend") or (options or {}).get("scaffold"))


def diagnostics_run(options: dict[str, Any] | None) -> bool:
    """Whether a run measured the diagnostics of cells ranked in other runs (``--diagnostics-run``)."""
    return bool((options or {}).get("diagnostics_run"))


def not_ranked(options: dict[str, Any] | None) -> bool:
    """Whether a run's results are never ranked with the from-scratch protocol's: a second phase (:func:`extended`)
    or a diagnostics run (:func:`diagnostics_run`)."""
    return extended(options) or diagnostics_run(options)


def set_aside_runs(sel: pd.DataFrame, run_rows: list[dict[str, Any]], which: Any
                   ) -> tuple[pd.DataFrame, pd.DataFrame, list[dict[str, Any]], list[dict[str, Any]]]:  # fmt: skip
    """``sel`` without the rows of the runs whose options ``which`` accepts, those rows, and the runs of each;
    nothing is set aside when nothing else would remain."""
    sized = {r["id"] for r in run_rows if which(r["options"])}
    if not sized or sized >= set(sel["run_id"]):
        return sel, sel.iloc[0:0], run_rows, []
    aside = sel["run_id"].isin(sized)
    return sel[~aside], sel[aside], [r for r in run_rows if r["id"] not in sized], \
        [r for r in run_rows if r["id"] in sized]  # fmt: skip


def _read_curves(engine: Any, ids: Any, known: Curves | None = None) -> Curves:
    """The learning curves of results ``ids`` (those of ``known`` taken from it, not read again)."""
    known = known or {}
    out: Curves = {int(i): known[int(i)] for i in ids if int(i) in known}
    missing = {int(i) for i in ids} - set(known)
    for rid, step, *values in store_load.curve_points(engine, missing) if missing else ():
        out.setdefault(int(rid), []).append((step, *values))
    return out


def _flat(curves: Curves) -> list[tuple[Any, ...]]:
    """``curves`` as :func:`pebench.store.load.curve_points` rows, by result id."""
    return [(rid, *p) for rid in sorted(curves) for p in curves[rid]]


def _owners_curves(engine: Any, rows: pd.DataFrame, known: Curves | None = None) -> Curves:
    """The learning curves of the models of ``rows``: of the result carrying each one's (:func:`curve_owners`)."""
    if rows.empty:
        return {}
    cols = ["id", "eval_length", *store_load.MODEL_KEY]
    return _read_curves(engine, sorted(set(curve_owners(rows[cols].to_dict("records")).values())), known)


def _masked(run: dict[str, Any]) -> dict[str, Any]:
    """``run`` with its command's passwords hidden (masked when stored, and again here for older writers)."""
    return {**run, "command": safe_url(run.get("command") or "")}


def _select(engine: Any, choice: int | str, point: str | None) -> PageData:
    """The rows of run ``choice`` at sweep ``point`` with their JSON; runs of both learning-rate protocols are never
    shown together (an error), and a protocol run shows each cell at the rate its validation chose."""
    df = store_load.load_light(engine)
    runs = [_masked(r) for r in store_load.runs(engine)]
    run_ids: list[int] = []
    if choice != "all" and (runs or choice not in ("latest", "previous")):
        run_ids = [resolve_run_id(engine, choice)]
    measuring = {r["id"] for r in runs if diagnostics_run(r["options"])} if choice == "all" else set()
    if measuring >= set(df["run_id"]):  # nothing else to rank: a diagnostics run shown as any run
        measuring = set()
    measured = select(df[df["run_id"].isin(measuring)], [], "all")[0]  # set aside before the latest of each case
    sel, shown_runs = select(df[~df["run_id"].isin(measuring)], run_ids, choice)
    run_rows = [r for r in runs if r["id"] in set(run_ids if choice != "all" else shown_runs)]
    sel, extension, run_rows, _ = set_aside_runs(sel, run_rows, extended) if choice == "all" and point is None else \
        (sel, sel.iloc[0:0], run_rows, [])  # fmt: skip
    sel, sizes, run_rows, size_runs = set_aside_sizes(sel, run_rows) if choice == "all" and point is None else \
        (sel, sel.iloc[0:0], run_rows, [])  # fmt: skip
    grids = {lr.protocol(r["options"]) for r in run_rows}
    if point is None and len(grids) > 1:  # --run all over runs of both protocols: never ranked together
        raise ReportError(f"{lr.mixed_text(grids)}: give --run RUN_ID, or --point lrV")
    rates = grids.pop() if run_rows and point is None and len(grids) == 1 else None
    every_point, curves = sel, {}
    if rates is not None:  # --lr-sweep: each cell at the rate its in-distribution validation chose
        every_point = store_load.attach_json(engine, sel)  # --lr-halving marks its choice in the metrics
        curves = _read_curves(engine, every_point["id"])
        sel = lr.chosen(every_point, lr.final_validation(_flat(curves)))
        sel = sel.assign(lr_grid=rates)  # the seed spread of this protocol (pebench.analysis.noise)
    elif len(points(sel)) > 1:  # the sweep's every point is ranked too (Across the sweep)
        every_point = store_load.attach_json(engine, sel)
        sel = one_point(every_point, point)
    else:
        sel = one_point(sel, point)
        sel = sel if sel.empty else store_load.attach_json(engine, sel)
    sizes = sizes if sizes.empty else store_load.attach_json(engine, sizes)
    extension = extension if extension.empty else store_load.attach_json(engine, extension)
    measured = measured if measured.empty else store_load.attach_json(engine, measured)
    if extension.empty and any(extended(r["options"]) for r in run_rows):  # an --extend run shown alone
        extension = sel
    data = PageData("", df, runs, run_rows, sel, every_point, rates, sizes, size_runs, extension=extension,
                    diagnostics=measured)
    data.curves = _owners_curves(engine, sel, curves)
    return data


def _previous_rows(df: pd.DataFrame, sel: pd.DataFrame, choice: int | str) -> pd.DataFrame:
    """The previous comparable rows of ``sel`` (:func:`previous_comparable`; none for ``--run all``), with their
    configurations and no metrics."""
    prev = previous_comparable(df, sel) if choice != "all" else sel.iloc[0:0]
    configs = dict(zip(sel["config_hash"], sel["config"], strict=True))
    return prev.assign(config=[configs.get(h, {}) for h in prev["config_hash"]], metrics=[{}] * len(prev))


def read_reference(url: str, sel: pd.DataFrame, rates: str | None = None) -> Reference:
    """The reference results at ``url`` joined with ``sel`` (:func:`pebench.analysis.reference.join`, their
    staleness included; of the run's learning-rate protocol ``rates`` only, and for a sweep each reference cell at its
    chosen rate), and their learning curves (read here: result ids are those of the reference database)."""
    try:
        engine = open_readonly(url)
    except PebenchError as err:  # named as the reference, not as --db
        raise ReportError(f"--with-reference {safe_url(url)}: {str(err).split(': ', 1)[-1]}") from None
    try:
        ref = store_load.load_light(engine)
        ref_runs = store_load.runs(engine)
        ref = ref[~ref["run_id"].isin({r["id"] for r in ref_runs if not_ranked(r["options"])})]  # another protocol
        protocols = {int(r["id"]): lr.protocol(r["options"]) for r in ref_runs}
        ref, other_protocol = protocol_split(ref, protocols, rates)
        ref = store_load.attach_json(engine, ref) if not ref.empty else ref.assign(config=[], metrics=[])
        curves: Curves = {}
        if rates is not None and not ref.empty:  # the latest result of each case, each cell at its chosen rate
            ref = ref.sort_values("id").drop_duplicates(["case_id", "seed"], keep="last")
            curves = _read_curves(engine, ref["id"])
            ref = lr.chosen(ref, lr.final_validation(_flat(curves))).assign(lr_grid=rates)
        stored = load_fingerprints(engine) if not ref.empty else {}
        settings = run_settings_of(engine, {int(r) for r in ref["run_id"]}) if not ref.empty else {}
        joined = join(sel, ref, chosen_rate=rates is not None, stored=stored, settings=settings)
        mine = set(sel["encoding"])
        joined.not_comparable += [line for line in other_protocol if line.split(" on ", 1)[0] not in mine]
        return Reference(safe_url(url), joined, _owners_curves(engine, joined.rows, curves))
    finally:
        engine.dispose()


def load_page(db_url: str, choice: int | str, point: str | None = None, reference: str | None = None) -> PageData:
    """All a page of run ``choice`` (an id, ``latest``, ``previous`` or ``all``) at sweep ``point`` shows, from the
    database at ``db_url``, and with ``reference`` (a database URL) the reference results joined with its rows; one
    pass, each table read once."""
    engine = open_readonly(db_url)
    try:
        data = _select(engine, choice, point)
    finally:
        engine.dispose()
    data.db_url, data.choice, data.point = safe_url(db_url), choice, point
    if data.sel.empty:
        return data
    data.prev = _previous_rows(data.df, data.sel, choice)
    data.superseded = int(len(data.df) - len(data.every_point)) if choice == "all" else 0
    if reference is not None:
        data.reference = read_reference(reference, data.sel, data.rates)
    return data
