"""What the page shows: the whole template context (:func:`build_context`) of what the loader read in one pass
(:func:`load`, :func:`pebench.analysis.page_data.load_page`: the run selection -- one run, latest, previous, or the
latest result of every case across runs --, the previous comparable run for deltas, curves, the reference join). The
context is built by :func:`page_context` from views of that data only: no database read here."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from typing import Any

import pandas as pd
from markupsafe import Markup

from pebench.analysis.page_data import (  # noqa: F401 (select, previous_comparable, set_aside_sizes: pebench.report's)
    PageData,
    ReportError,
    load_page,
    previous_comparable,
    select,
    set_aside_sizes,
)
from pebench.analysis.ranking import REPLICATES, Ranking
from pebench.analysis.reference import nothing_comparable_text, stale_text
from pebench.analysis.sweeps import points, rankings
from pebench.report import attn, board, charts, header, overview, predicted, seeds, standing, svg, views
from pebench.report.extension import extension_view
from pebench.report.findings import findings_view
from pebench.report.grid import cell_grids
from pebench.report.rates import per_encoding
from pebench.report.scale import scale_views
from pebench.report.sweep import sweep_view
from pebench.report.why import HEADERS as WHY_HEADERS
from pebench.report.why import why_view

RUN_CHOICES = "a run id, latest, previous or all"


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


def lr_view(rates: str, sel: pd.DataFrame) -> dict[str, Any]:
    """The page's notice for an ``--lr-sweep`` run: the rates and how many cells chose each."""
    cells = sel.drop_duplicates(["encoding", "task", "train_length", "seed"]) if not sel.empty else sel
    chosen = cells["lr_rate"] if not cells.empty and "lr_rate" in cells else []
    counts = Counter(float(r) for r in chosen if r is not None and not pd.isna(r))  # from the stored axes
    return {"rates": rates, "chosen": ", ".join(f"{r:g}: {n}" for r, n in sorted(counts.items())),
            "n_cells": len(cells)}  # fmt: skip


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


def _head(d: PageData) -> dict[str, Any]:
    """The context of every page, with results or without: the title, the header and the run's protocol; the parts
    that need results at their empty values."""
    mode = "all runs (latest result of each case)" if d.choice == "all" else "one run"
    return {
        "title": "pebench leaderboard",
        "generated": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "db_url": d.db_url,
        "header": header.header_info(d.sel, d.run_rows, mode, d.every_point if d.rates is not None else None),
        "empty": d.sel.empty,
        "n_runs_in_db": len(d.runs),
        "reference": None,
        "predicted": None,
        "standing": [],
        "why": [],
        "extension": None,
        "across_scale": [],
        "lr_protocol": None if d.rates is None else lr_view(d.rates, d.sel),
        # a run merged to ship (pebench merge --slim) had its attention snapshots dropped: say so, not "none"
        "slim": next(filter(None, ((r["options"] or {}).get("slim") for r in d.run_rows)), None),
    }


def _with_reference(d: PageData, allow_stale: bool) -> tuple[pd.DataFrame, dict[str, Any] | None]:
    """The page's rows beside the comparable reference results read with them (:attr:`PageData.reference`), and the
    context's ``reference`` entry; stale reference results (unless ``allow_stale``: their staleness read, not computed
    here) and nothing comparable are errors."""
    if d.reference is None:
        return d.sel, None
    joined, url = d.reference.joined, d.reference.url
    if joined.stale and not allow_stale:
        raise ReportError(f"--with-reference {url}: {stale_text(joined)}")
    if joined.rows.empty and joined.not_comparable:
        raise ReportError(f"--with-reference {url}: {nothing_comparable_text(joined)}")
    info = {"url": url, "encodings": joined.encodings, "n_cells": len(joined.rows),
            "not_comparable": joined.not_comparable, "stale": joined.stale,
            "yours": sorted(set(d.sel["encoding"]))}  # fmt: skip
    return pd.concat([d.sel, joined.rows], ignore_index=True), info


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


def _curve_lines(d: PageData, keys: dict[tuple[str, int], tuple[str, str]]) -> dict[str, Any]:
    """The learning curves of the page's own rows (:func:`charts.curves`) with the reference's, under this page's
    task keys."""
    lines = charts.curves(d.curves, d.sel, keys)
    if d.reference is None or d.reference.joined.rows.empty:
        return lines
    rows = d.reference.joined.rows
    ref_keys = {(t, int(L)): (t, t) for t, L in zip(rows["task"], rows["train_length"], strict=True)}
    for column, by_task in charts.curves(d.reference.curves, rows, ref_keys).items():
        for (task, _), (page_key, _) in keys.items():
            lines.setdefault(column, {}).setdefault(page_key, {}).update(by_task.get(task, {}))
    return lines


def load(db_url: str, run: int | str | None = "latest", point: str | None = None, reference: str | None = None
         ) -> PageData:  # fmt: skip
    """What a page of ``db_url``'s run ``run`` shows, read in one pass (:func:`pebench.analysis.page_data.load_page`;
    ``run`` checked first)."""
    return load_page(db_url, _check_run(run), point, reference)


def build_context(db_url: str, run: int | str | None = "latest", point: str | None = None,
                  reference: str | None = None, allow_stale: bool = False, curves: str | None = None
                  ) -> dict[str, Any]:  # fmt: skip
    """Everything the template needs, from the database at ``db_url`` (one sweep point of it, :func:`one_point`;
    with ``reference``, a database URL, beside the comparable reference results of the encodings it does not have:
    :mod:`pebench.analysis.reference`); ``curves``: the encodings whose learning curves are drawn besides the
    leaders' (comma-separated, or ``all``; :func:`curve_context`)."""
    return page_context(load(db_url, run, point, reference), allow_stale, curves)


def page_context(d: PageData, allow_stale: bool = False, curves: str | None = None) -> dict[str, Any]:
    """The template context of what :func:`load` read: views of it only, no database read."""
    context = _head(d)
    if d.sel.empty:
        return context
    sel, context["reference"] = _with_reference(d, allow_stale)
    assembled = views.assemble(sel, d.prev)
    grids = _task_figures(assembled)
    order = [e.encoding for e in assembled.entries]
    failures, n_failures = header.failures(sel)
    lines = _curve_lines(d, assembled.keys)
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
        previous_runs=sorted(int(r) for r in d.prev["run_id"].unique()) if not d.prev.empty else [],
        failures=failures,
        n_failures=n_failures,
        max_failures=header.MAX_FAILURES_SHOWN,
        superseded=d.superseded,
        findings=findings_view(sel if d.extension.empty or d.extension.equals(d.sel) else
                               pd.concat([sel, d.extension]), d.diagnostics),  # the extension's own points
        why=why_view(sel, order, d.diagnostics),
        extension=extension_view(d.extension, sel if not d.extension.equals(d.sel) else sel.iloc[0:0]),
        why_headers=WHY_HEADERS,
        why_runs=sorted({int(r) for r in d.diagnostics["run_id"]}) if not d.diagnostics.empty else [],
        any_partial=any(e.partial for e in assembled.entries),
        point=d.point,
        # a learning-rate protocol's rates are summarised (lr_rates), not ranked point by point
        sweep=sweep_view(rankings(d.every_point), assembled.colors)
        if d.rates is None and len(points(d.every_point)) > 1 else [],
        lr_rates=per_encoding(sel, order, assembled.colors) if d.rates is not None else None,
        across_scale=scale_views(d.sizes, d.size_runs, assembled, d.every_point if d.rates is not None else None),
    )
    return context
