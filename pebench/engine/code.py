"""Which code a result was trained by: :func:`code_version`, the hash stored with every result (``--reuse`` copies
only results of the same code), and :func:`stale_cells`, the cells of a database trained by other code than this
pebench's (``pebench results --stale``: to be rebuilt).

A source file is hashed as its syntax tree without docstrings and comments (:func:`source_text`): editing the
documentation of the model, an encoding or a task never makes results stale; any change to what runs does."""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from pebench import encodings, tasks
from pebench.plugins import external_files


def _source_files(*modules: Any) -> Iterable[Path]:
    for mod in modules:
        path = Path(mod.__file__)
        if path.name == "__init__.py":
            yield from sorted(path.parent.glob("*.py"))
        else:
            yield path


_TEXTS: dict[tuple[str, int, int], bytes] = {}


def source_text(path: Path) -> bytes:
    """What of a source file takes part in a hash: for Python, the dump of its syntax tree with every docstring and
    bare string statement removed (comments are not in the tree; line numbers are not dumped), so only code counts;
    the raw bytes of anything that does not parse. Kept per file while its size and modification time stay."""
    stat = path.stat()
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    if key not in _TEXTS:
        _TEXTS[key] = _text(path.read_bytes())
    return _TEXTS[key]


def _text(raw: bytes) -> bytes:
    try:
        tree = ast.parse(raw)
    except (SyntaxError, ValueError):
        return raw
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body:
            kept = [s for s in body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                                            and isinstance(s.value.value, str))]  # fmt: skip
            node.body = kept or [ast.Pass()]  # type: ignore[attr-defined]
    return ast.dump(tree).encode()


def code_version(encoding_cls: type, task_cls: type) -> str:
    """Hash of the source that affects results: model, trainer (with packing and the stop rule), evaluation, the
    bases, this encoding's and this task's modules (for a wrapper made for an inner encoding, ``randomized_<X>`` or
    ``ssmax_<X>``, X's modules too), and a plugin's source files (:func:`pebench.plugins.external_files`; none for
    pebench's own classes), each as :func:`source_text`."""
    import inspect

    from pebench import models
    from pebench.encodings import base as enc_base
    from pebench.engine import evaluation, packing, stopping, training
    from pebench.tasks import base as task_base

    h = hashlib.sha256()
    files = [*_source_files(models, training, packing, stopping, evaluation, enc_base, task_base)]
    inner = getattr(encoding_cls, "inner_cls", None)
    for cls in (encoding_cls, task_cls, *([inner] if isinstance(inner, type) else [])):
        for klass in cls.__mro__:
            mod = inspect.getmodule(klass)
            if mod is not None and getattr(mod, "__file__", None) and mod.__name__.startswith("pebench."):
                files.append(Path(mod.__file__))
    for path in [*sorted(set(files)), *external_files(encoding_cls, task_cls)]:
        h.update(path.name.encode())
        h.update(source_text(path))
    return h.hexdigest()[:16]


def plugin_code(encoding_cls: type, task_cls: type) -> str:
    """Hash of the plugin source files of an (encoding, task) pair; "" when both are pebench's own."""
    files = external_files(encoding_cls, task_cls)
    if not files:
        return ""
    h = hashlib.sha256()
    for path in files:
        h.update(path.name.encode())
        h.update(source_text(path))
    return h.hexdigest()[:16]


def stale_cells(df: pd.DataFrame) -> list[str]:
    """One line per (encoding, task) of the results ``df`` whose latest result's ``code_version`` is not what this
    pebench computes for it (trained by other code; an encoding or task this pebench does not know is named as
    such)."""
    lines = []
    if df.empty:
        return lines
    latest = df.sort_values("id").groupby(["encoding", "task"], sort=True).tail(1)
    for row in latest.itertuples():
        try:
            now = code_version(encodings.get(row.encoding), tasks.get(row.task))
        except KeyError:
            lines.append(f"{row.encoding} on {row.task}: not known to this pebench (a plugin not loaded?)")
            continue
        if row.code_version != now:
            lines.append(f"{row.encoding} on {row.task}: trained by code {row.code_version or 'unrecorded'} "
                         f"(run {row.run_id}), this pebench is {now}")  # fmt: skip
    return lines
