"""The results store: the schema (:mod:`~pebench.store.schema`), opening and writing
(:mod:`~pebench.store.database`), the typed result record (:mod:`~pebench.store.record`), reading back
(:mod:`~pebench.store.load`), result reuse (:mod:`~pebench.store.reuse`) and the stored attention snapshot
(:mod:`~pebench.store.attention`)."""

from pebench.store.database import (
    add_result,
    finish_run,
    open_db,
    project_root,
    resolve_run_id,
    resolve_url,
    session_scope,
    start_run,
)
from pebench.store.record import ResultRecord
from pebench.store.schema import RESULT_FIELDS, SCHEMA_VERSION, Base, CurvePoint, Result, Run

__all__ = [
    "RESULT_FIELDS", "SCHEMA_VERSION", "Base", "CurvePoint", "Result", "ResultRecord", "Run", "add_result",
    "finish_run", "open_db", "project_root", "resolve_run_id", "resolve_url", "session_scope", "start_run",
]  # fmt: skip
