"""What the page shows: the run selection (one run, latest, previous, or the latest result of every case across runs),
the previous comparable run for deltas, and the whole template context (:func:`build_context`)."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pandas as pd
from markupsafe import Markup

from pebench.analysis import across_scale, lr
from pebench.analysis.currency import run_settings_of
from pebench.analysis.ranking import REPLICATES, Ranking
from pebench.analysis.reference import Joined, join, nothing_comparable_text, protocol_split, stale_text
from pebench.analysis.sweeps import one_point, points, rankings
from pebench.errors import PebenchError
from pebench.report import attn, board, charts, header, overview, predicted, seeds, standing, svg, views
from pebench.report.findings import findings_view
from pebench.report.grid import cell_grids
from pebench.report.rates import per_encoding
from pebench.report.scale import scale_views
from pebench.report.sweep import sweep_view
from pebench.store import load as store_load
from pebench.store.database import open_readonly, resolve_run_id, safe_url
from pebench.store.fingerprints import load_fingerprints

RUN_CHOICES = "a run id, latest, previous or all"


class ReportError(PebenchError):
    """Bad input to the report (run selection, output path)."""


def _check_run(run: int | str | None) -> int | str:
    if run is None:
        return "latest"
    if isinstance(run, int) and not isinstance(run, bool):
        return run
    text = str(run).strip()
    if text in ("latest", "previous", "all"):
        return text
    try:
        return int(text)
    except ValueError:
        raise ReportError(f"--run {run!r} is not valid; expected {RUN_CHOICES}") from None


def select(df: pd.DataFrame, run_ids: list[int], run: int | str) -> tuple[pd.DataFrame, list[int]]:
    """The rows to show and the run ids they come from. ``all``: the latest result of every (encoding, task,
    train length, eval length, seed, sweep point) across runs; otherwise the rows of the one resolved run."""
    if run == "all":
        if df.empty:
            return df, []
        key = ["encoding", "task", "train_length", "eval_length", "seed", "point"]  # the sweep point too
        sel = df.assign(point=store_load.point_column(df)).sort_values("id").drop_duplicates(key, keep="last")
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


def lr_view(rates: str, sel: pd.DataFrame) -> dict[str, Any]:
    """The page's notice for an ``--lr-sweep`` run: the rates and how many cells chose each."""
    cells = sel.drop_duplicates(["encoding", "task", "train_length", "seed"]) if not sel.empty else sel
    chosen = cells["lr_rate"] if not cells.empty and "lr_rate" in cells else []
    counts = Counter(float(r) for r in chosen if r is not None and not pd.isna(r))  # from the stored axes
    return {"rates": rates, "chosen": ", ".join(f"{r:g}: {n}" for r, n in sorted(counts.items())),
            "n_cells": len(cells)}  # fmt: skip


def _reference(url: str, sel: pd.DataFrame, rates: str | None = None) -> tuple[Joined, dict[str, Any]]:
    """The reference results at ``url`` joined with ``sel`` (:func:`pebench.analysis.reference.join`; of the run's
    learning-rate protocol ``rates`` only, and for a sweep each reference cell at its chosen rate), and their learning
    curves (read here: result ids are those of the reference database)."""
    try:
        engine = open_readonly(url)
    except PebenchError as err:  # named as the reference, not as --db
        raise ReportError(f"--with-reference {safe_url(url)}: {str(err).split(': ', 1)[-1]}") from None
    try:
        ref = store_load.load_light(engine)
        protocols = {int(r["id"]): lr.protocol(r["options"]) for r in store_load.runs(engine)}
        ref, other_protocol = protocol_split(ref, protocols, rates)
        ref = store_load.attach_json(engine, ref) if not ref.empty else ref.assign(config=[], metrics=[])
        if rates is not None and not ref.empty:  # the latest result of each case, each cell at its chosen rate
            ref = ref.sort_values("id").drop_duplicates(["case_id", "seed"], keep="last")
            ref = lr.chosen(ref, lr.final_validation(store_load.curve_points(engine, ref["id"]))).assign(lr_grid=rates)
        stored = load_fingerprints(engine) if not ref.empty else {}
        settings = run_settings_of(engine, {int(r) for r in ref["run_id"]}) if not ref.empty else {}
        joined = join(sel, ref, chosen_rate=rates is not None, stored=stored, settings=settings)
        mine = set(sel["encoding"])
        joined.not_comparable += [line for line in other_protocol if line.split(" on ", 1)[0] not in mine]
        keys = {(t, int(L)): (t, t) for t, L in zip(joined.rows["task"], joined.rows["train_length"], strict=True)}
        curves = charts.curves(engine, joined.rows, keys) if not joined.rows.empty else {}
        return joined, curves
    finally:
        engine.dispose()


def ranking_info(ranking: Ranking | None) -> dict[str, Any]:
    """The leaderboard's words on its ranking: bootstrap replicates, the tie groups' sentence, the alternatives."""
    return {"replicates": REPLICATES, "sentence": board.groups_text(ranking) if ranking else "",
            "alternatives": board.agreement(ranking) if ranking else []}  # fmt: skip


def curve_context(lines: dict[str, Any], assembled: views.Assembled, yours: list[str], asked: str | None
                  ) -> dict[str, Any]:  # fmt: skip
    """The learning curves' part of the context: the charts of the encodings :func:`charts.curve_encodings` picks
    (``asked``: ``pebench report --curves``, names not on the page refused) and what the caption says of them."""
    names = [n.strip() for n in asked.split(",") if n.strip()] if asked is not None else None
    order = [e.encoding for e in assembled.entries]
    if unknown := [n for n in names or () if n != "all" and n not in order]:
        raise ReportError(f"--curves {', '.join(unknown)}: not an encoding of this page ({', '.join(order)})")
    shown = charts.curve_encodings(assembled.entries, yours, names)
    loss = charts.only(lines.get("loss", {}), shown)
    validation = {column: charts.only(by_task, shown) for column, by_task in lines.items()}
    drawn = {e for by_task in lines.values() for by_enc in by_task.values() for e in by_enc}  # encodings with a curve
    return {
        "curves_svg": Markup(charts.learning_curves(loss, assembled.tasks, assembled.colors, assembled.markers)),
        "validation_svg": Markup(charts.validation_curves(validation, assembled.tasks, assembled.colors,
                                                          assembled.markers)),  # fmt: skip
        "curves_note": {"leaders": [e for e in order[: charts.CURVE_LEADERS] if e in shown],
                        "yours": [e for e in yours if e in shown],
                        "asked": [e for e in shown if e not in order[: charts.CURVE_LEADERS] and e not in yours],
                        "left_out": sorted(drawn - set(shown))},  # fmt: skip
    }


@dataclass
class _Selection:
    """The rows a page shows and where they come from (:func:`_select_rows`)."""

    df: pd.DataFrame
    """Every result of the database, without its JSON columns."""
    runs: list[dict[str, Any]]
    """Every run of the database."""
    run_rows: list[dict[str, Any]]
    """The runs the page shows."""
    sel: pd.DataFrame
    """The rows shown: one sweep point (:func:`one_point`), or each cell at its chosen rate (``--lr-sweep``)."""
    every_point: pd.DataFrame
    """The rows shown at every sweep point and rate."""
    rates: str | None
    """The learning-rate protocol's rates of an ``--lr-sweep`` run shown whole; None otherwise."""
    sizes: pd.DataFrame
    """With ``--run all``: the rows of the runs at another model size (:func:`set_aside_sizes`), compared with the
    shown rows across scale and never ranked with them; empty otherwise."""
    size_runs: list[dict[str, Any]]


def _select_rows(engine: Any, choice: int | str, point: str | None) -> _Selection:
    """The rows of run ``choice`` (:func:`_check_run`'s) at sweep ``point``; runs of both learning-rate protocols are
    never shown together (an error), and a protocol run shows each cell at the rate its validation chose."""
    df = store_load.load_light(engine)
    runs = store_load.runs(engine)
    run_ids: list[int] = []
    if choice != "all" and (runs or choice not in ("latest", "previous")):
        run_ids = [resolve_run_id(engine, choice)]
    sel, shown_runs = select(df, run_ids, choice)
    run_rows = [r for r in runs if r["id"] in set(run_ids if choice != "all" else shown_runs)]
    sel, sizes, run_rows, size_runs = set_aside_sizes(sel, run_rows) if choice == "all" and point is None else \
        (sel, sel.iloc[0:0], run_rows, [])  # fmt: skip
    grids = {lr.protocol(r["options"]) for r in run_rows}
    if point is None and len(grids) > 1:  # --run all over runs of both protocols: never ranked together
        raise ReportError(f"{lr.mixed_text(grids)}: give --run RUN_ID, or --point lrV")
    rates = grids.pop() if run_rows and point is None and len(grids) == 1 else None
    every_point = sel
    if rates is not None:  # --lr-sweep: each cell at the rate its in-distribution validation chose
        sel = store_load.attach_json(engine, sel)  # --lr-halving marks its choice in the metrics
        sel = lr.chosen(sel, lr.final_validation(store_load.curve_points(engine, sel["id"])))
        sel = sel.assign(lr_grid=rates)  # the seed spread of this protocol (pebench.analysis.noise)
    else:
        sel = one_point(sel, point)
    return _Selection(df, runs, run_rows, sel, every_point, rates, sizes, size_runs)


def set_aside_sizes(sel: pd.DataFrame, run_rows: list[dict[str, Any]]
                    ) -> tuple[pd.DataFrame, pd.DataFrame, list[dict[str, Any]], list[dict[str, Any]]]:  # fmt: skip
    """``sel`` without the rows of the runs that swept only the model's size
    (:func:`pebench.analysis.across_scale.size_sweep`), those rows, and the runs of each; nothing is set aside when
    nothing else would remain (a page of such a run alone shows its sweep as any other)."""
    sized = {r["id"] for r in run_rows if across_scale.size_sweep(r["options"])}
    if not sized or sized >= set(sel["run_id"]):
        return sel, sel.iloc[0:0], run_rows, []
    aside = sel["run_id"].isin(sized)
    return sel[~aside], sel[aside], [r for r in run_rows if r["id"] not in sized], \
        [r for r in run_rows if r["id"] in sized]  # fmt: skip


def _head(db_url: str, s: _Selection, choice: int | str) -> dict[str, Any]:
    """The context of every page, with results or without: the title, the header and the run's protocol; the parts
    that need results at their empty values."""
    mode = "all runs (latest result of each case)" if choice == "all" else "one run"
    return {
        "title": "pebench leaderboard",
        "generated": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "db_url": safe_url(db_url),
        "header": header.header_info(s.sel, s.run_rows, mode, s.every_point if s.rates is not None else None),
        "empty": s.sel.empty,
        "n_runs_in_db": len(s.runs),
        "reference": None,
        "predicted": None,
        "standing": [],
        "across_scale": [],
        "lr_protocol": None if s.rates is None else lr_view(s.rates, s.sel),
        # a run merged to ship (pebench merge --slim) had its attention snapshots dropped: say so, not "none"
        "slim": next(filter(None, ((r["options"] or {}).get("slim") for r in s.run_rows)), None),
    }


def _previous_rows(df: pd.DataFrame, sel: pd.DataFrame, choice: int | str) -> pd.DataFrame:
    """The previous comparable rows of ``sel`` for the deltas (:func:`previous_comparable`; none for ``--run all``),
    with their configurations and no metrics."""
    prev = previous_comparable(df, sel) if choice != "all" else sel.iloc[0:0]
    configs = dict(zip(sel["config_hash"], sel["config"], strict=True))
    return prev.assign(config=[configs.get(h, {}) for h in prev["config_hash"]], metrics=[{}] * len(prev))


def _join_reference(reference: str, sel: pd.DataFrame, rates: str | None, allow_stale: bool
                    ) -> tuple[pd.DataFrame, dict[str, Any], dict[str, Any]]:  # fmt: skip
    """``sel`` beside the comparable reference results at ``reference`` (:func:`_reference`), the context's
    ``reference`` entry and the reference's learning curves; stale reference results (unless ``allow_stale``) and
    nothing comparable are errors."""
    joined, ref_curves = _reference(reference, sel, rates)
    if joined.stale and not allow_stale:
        raise ReportError(f"--with-reference {safe_url(reference)}: {stale_text(joined)}")
    if joined.rows.empty and joined.not_comparable:
        raise ReportError(f"--with-reference {safe_url(reference)}: {nothing_comparable_text(joined)}")
    info = {"url": safe_url(reference), "encodings": joined.encodings, "n_cells": len(joined.rows),
            "not_comparable": joined.not_comparable, "stale": joined.stale,
            "yours": sorted(set(sel["encoding"]))}  # fmt: skip
    return pd.concat([sel, joined.rows], ignore_index=True), info, ref_curves


def _task_figures(assembled: views.Assembled) -> dict[str, Any]:
    """Draw each task's length plot and attention maps into its view; the grid heatmaps by task key (tasks with grid
    cells only, e.g. addition with grid=true)."""
    groups, keys = assembled.groups, assembled.keys
    by_key = {keys[tk][0]: tk for tk in groups}
    grids = {}
    for view in assembled.tasks:
        view.plot_svg = Markup(charts.length_plot(view, assembled.markers))
        attn.attention_maps(view, groups[by_key[view.key]])
        if found := cell_grids(view, groups[by_key[view.key]]):
            grids[view.key] = found
    return grids


def _curve_lines(engine: Any, own: pd.DataFrame, keys: dict[tuple[str, int], tuple[str, str]],
                 ref_curves: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    """The learning curves of ``own`` rows (:func:`charts.curves`) with the reference's, under this page's task
    keys."""
    lines = charts.curves(engine, own, keys)
    for column, by_task in ref_curves.items():
        for (task, _), (page_key, _) in keys.items():
            lines.setdefault(column, {}).setdefault(page_key, {}).update(by_task.get(task, {}))
    return lines


def build_context(db_url: str, run: int | str | None = "latest", point: str | None = None,
                  reference: str | None = None, allow_stale: bool = False, curves: str | None = None
                  ) -> dict[str, Any]:  # fmt: skip
    """Everything the template needs, from the database at ``db_url`` (one sweep point of it, :func:`one_point`;
    with ``reference``, a database URL, beside the comparable reference results of the encodings it does not have:
    :mod:`pebench.analysis.reference`); ``curves``: the encodings whose learning curves are drawn besides the
    leaders' (comma-separated, or ``all``; :func:`curve_context`)."""
    choice = _check_run(run)
    engine = open_readonly(db_url)
    try:
        s = _select_rows(engine, choice, point)
        context = _head(db_url, s, choice)
        if s.sel.empty:
            return context
        sel = s.sel if "config" in s.sel else store_load.attach_json(engine, s.sel)
        prev = _previous_rows(s.df, sel, choice)
        # results not shown: superseded by a later one of their case (not the rates a cell did not choose)
        superseded = int(len(s.df) - len(s.every_point)) if choice == "all" else 0
        own, ref_curves = sel, {}
        if reference is not None:
            sel, context["reference"], ref_curves = _join_reference(reference, sel, s.rates, allow_stale)
        assembled = views.assemble(sel, prev)
        grids = _task_figures(assembled)
        order = [e.encoding for e in assembled.entries]
        failures, n_failures = header.failures(sel)
        lines = _curve_lines(engine, own, assembled.keys, ref_curves)
        yours = context["reference"]["yours"] if context["reference"] else []
        overview.add_keeps(assembled.entries, assembled.tasks)
        context.update(
            tasks=assembled.tasks,
            cell_grids=grids,
            entries=assembled.entries,
            ranking_info=ranking_info(assembled.ranking),
            predicted=predicted.standing(assembled, yours),
            standing=standing.terminal_lines(assembled, yours),
            colors=assembled.colors,
            overview=overview.overview(assembled, yours),
            marker_defs=Markup(svg.marker_defs()),  # the charts' marker shapes, once
            attention_scale_svg=Markup(attn.colour_bar()),
            **curve_context(lines, assembled, yours, curves),
            has_deltas=assembled.has_deltas,
            stopped_early=seeds.stopped_early(r.stop_reasons for view in assembled.tasks for r in view.rows),
            previous_runs=sorted(int(r) for r in prev["run_id"].unique()) if not prev.empty else [],
            failures=failures,
            n_failures=n_failures,
            max_failures=header.MAX_FAILURES_SHOWN,
            superseded=superseded,
            findings=findings_view(sel),
            any_partial=any(e.partial for e in assembled.entries),
            point=point,
            # a learning-rate protocol's rates are summarised (lr_rates), not ranked point by point
            sweep=sweep_view(rankings(store_load.attach_json(engine, s.every_point)), assembled.colors)
            if s.rates is None and len(points(s.every_point)) > 1 else [],
            lr_rates=per_encoding(sel, order, assembled.colors) if s.rates is not None else None,
            across_scale=scale_views(engine, s.sizes, s.size_runs, assembled,
                                     s.every_point if s.rates is not None else None),
        )
        return context
    finally:
        engine.dispose()
