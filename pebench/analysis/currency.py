"""The stale cells of a database, read for :func:`pebench.engine.code.stale_rows`: the latest result of each cell in
each run with its stored configuration, each run's settings rebuilt with this pebench's defaults
(:func:`pebench.engine.currency.run_settings`) and the fingerprints the results point to. ``pebench results --stale``,
``pebench rebuild``, ``--with-reference`` and the page all judge currency through :func:`stale_pairs`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import Engine

from pebench.engine.code import latest, stale_cells, stale_rows
from pebench.engine.currency import RunSettings, run_settings
from pebench.store.fingerprints import load_fingerprints
from pebench.store.load import attach_json, runs

if TYPE_CHECKING:
    import pandas as pd


def run_settings_of(engine: Engine, run_ids: set[int] | None = None) -> dict[int, RunSettings | str]:
    """Each run's (or those of ``run_ids``) settings as this pebench rebuilds them; where they cannot be rebuilt (a
    stored sweep this pebench refuses), why, as a string."""
    out: dict[int, RunSettings | str] = {}
    for run in runs(engine):
        rid = int(run["id"])
        if run_ids is not None and rid not in run_ids:
            continue
        try:
            out[rid] = run_settings(run["options"] or {}, [run.get("command") or ""])
        except Exception as err:  # a stored option this pebench no longer accepts
            out[rid] = f"its run's settings cannot be rebuilt now: {type(err).__name__}: {err}"
    return out


def _inputs(engine: Engine, df: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, Any], dict[int, RunSettings | str]]:
    rows = latest(df)
    if "config" not in rows:  # the configuration only: a result's metrics may hold its attention snapshot
        rows = attach_json(engine, rows, ("config",))
    digests = set(rows["encoding_fingerprint"]) | set(rows["task_fingerprint"])
    return rows, load_fingerprints(engine, digests), run_settings_of(engine, {int(r) for r in rows["run_id"]})


def stale_pairs(engine: Engine, df: pd.DataFrame) -> list[tuple[Any, str]]:
    """The stale cells among ``df`` (rows of :func:`pebench.store.load.load_light` of ``engine``'s database): the
    latest result of each with why (:func:`pebench.engine.code.staleness`)."""
    return stale_rows(*_inputs(engine, df)) if not df.empty else []


def stale_lines(engine: Engine, df: pd.DataFrame) -> list[str]:
    """One line per stale cell of ``df`` (:func:`pebench.engine.code.stale_cells`): ``rope on k_back: default
    changed: rope base 10000.0 -> 10001.0 (run 1)``."""
    return stale_cells(*_inputs(engine, df)) if not df.empty else []
