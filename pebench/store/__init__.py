"""The results store: the schema (:mod:`~pebench.store.schema`), opening and writing
(:mod:`~pebench.store.database`), reading back (:mod:`~pebench.store.load`) and result reuse
(:mod:`~pebench.store.reuse`). The typed result record it writes and the attention snapshot's format live below it,
in :mod:`pebench.records`."""

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
from pebench.store.schema import RESULT_FIELDS, SCHEMA_VERSION, Base, CurvePoint, Result, Run

__all__ = [
    "RESULT_FIELDS", "SCHEMA_VERSION", "Base", "CurvePoint", "Result", "Run", "add_result",
    "finish_run", "open_db", "project_root", "resolve_run_id", "resolve_url", "session_scope", "start_run",
]  # fmt: skip
