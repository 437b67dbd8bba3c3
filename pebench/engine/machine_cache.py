"""Values computed once per machine and kept between processes in a JSON file (a table of key -> value).

A key names one computation: everything its value depends on (configuration, pebench's source, torch, the CPU), so a
value found under it is the value computing it again would give -- or, for a timing, would give on this machine.
The fingerprints (:mod:`pebench.engine.fingerprint`) and the suite's step rates (:mod:`pebench.suite.estimate`) are
kept this way. A file that cannot be read or written is no error: the value is computed, and a writer racing another
at the same instant costs a recomputation only.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any


def read_through(path: Path | None, key: str, compute: Callable[[], Any]) -> Any:
    """The value under ``key`` in the table at ``path``, else ``compute()``'s, added to the table (``path`` None:
    computed, nothing kept)."""
    table: dict[str, Any] = {}
    if path is not None and path.is_file():
        with contextlib.suppress(OSError, ValueError):
            table = json.loads(path.read_text())
    if key in table:
        return table[key]
    value = compute()
    if path is not None:
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(table | {key: value}))
            tmp.replace(path)  # atomic
    return value
