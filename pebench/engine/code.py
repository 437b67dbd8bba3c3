"""Which code a result was trained by: :func:`code_version`, the source hash stored with every result as provenance,
and :func:`stale_cells`, the cells of a database whose results are not what this pebench computes (``pebench results
--stale``: to be rebuilt): by their configuration (:mod:`pebench.engine.currency`: the one this pebench builds at
their run's settings, defaults current) and by behaviour (:mod:`pebench.engine.fingerprint`), by the source hash
instead of behaviour only for results stored without fingerprints.

A source file is hashed as its syntax tree without docstrings and comments (:func:`source_text`): editing the
documentation of the model, an encoding or a task never makes results stale; any change to what runs does."""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pebench import encodings, tasks
from pebench.engine.currency import RunSettings, drift, stored_case
from pebench.plugins import external_files

if TYPE_CHECKING:
    import pandas as pd


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
    """Hash of the source that affects results: model, trainer (with its settings, packing and the stop rule),
    evaluation, the bases, this encoding's and this task's modules (for a wrapper made for an inner encoding,
    ``randomized_<X>`` or ``ssmax_<X>``, X's modules too), and a plugin's source files
    (:func:`pebench.plugins.external_files`; none for pebench's own classes), each as :func:`source_text`."""
    import inspect

    from pebench import models
    from pebench.encodings import base as enc_base
    from pebench.engine import evaluation, packing, stopping, train_config, training
    from pebench.tasks import base as task_base

    h = hashlib.sha256()
    files = [*_source_files(models, training, train_config, packing, stopping, evaluation, enc_base, task_base)]
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


def stale_rows(df: pd.DataFrame, stored: Mapping[str, Mapping[str, Any]] | None = None,
               runs: Mapping[int, RunSettings | str] | None = None) -> list[tuple[Any, str]]:
    """The latest result of each (encoding, task) of each run of ``df`` (:func:`latest`) that is not what this
    pebench computes, with why
    (:func:`staleness`; ``stored``: the database's fingerprints, :func:`pebench.store.fingerprints.load_fingerprints`;
    ``runs``: each run's settings, :func:`pebench.engine.currency.run_settings`, for the configuration test, with
    ``df``'s ``config`` column); an encoding or task this pebench does not know is stale as such."""
    out: list[tuple[Any, str]] = []
    if df.empty:
        return out
    for row in latest(df).itertuples():
        try:
            why = staleness(row, stored or {}, runs)
        except KeyError:
            why = "not known to this pebench (a plugin not loaded?)"
        if why:
            out.append((row, why))
    return out


def latest(df: pd.DataFrame) -> pd.DataFrame:
    """The latest result (highest id) of each (encoding, task) of each run of ``df``: the one that stands for the
    cell in that run (a cell held by several runs -- the default size and a size run set aside, say -- is judged in
    each, at each run's own settings)."""
    keys = ["run_id", "encoding", "task"] if "run_id" in df else ["encoding", "task"]
    return df.sort_values("id").groupby(keys, sort=True).tail(1)


def stale_cells(df: pd.DataFrame, stored: Mapping[str, Mapping[str, Any]] | None = None,
                runs: Mapping[int, RunSettings | str] | None = None) -> list[str]:
    """One line per stale (encoding, task) of each run of ``df`` (:func:`stale_rows`): ``rope on k_back: why (run
    N)``; :func:`cells_of` reads the cells back."""
    return [f"{row.encoding} on {row.task}: {why}" + ("" if why.startswith("not known") else f" (run {row.run_id})")
            for row, why in stale_rows(df, stored, runs)]  # fmt: skip


def cells_of(lines: list[str]) -> list[str]:
    """The distinct cells (``rope on k_back``) of :func:`stale_cells`'s lines, sorted."""
    return sorted({line.split(":", 1)[0] for line in lines})


def staleness(row: Any, stored: Mapping[str, Mapping[str, Any]],
              runs: Mapping[int, RunSettings | str] | None = None) -> str:
    """Why the result ``row`` (with ``encoding``, ``task``, ``code_version``, the fingerprint digests and, for the
    configuration test, ``config`` and ``run_id``) is not what this pebench computes; "" when it is. Three reasons,
    each one clause: its configuration is not the one this pebench builds for its case at its run's settings
    (:func:`pebench.engine.currency.drift`: ``default changed: rope base 10000.0 -> 10001.0``); its task's data digest
    is not this pebench's exactly (``task data changed``); its encoding's probe is not within the tolerance
    (``computes otherwise (probe N x the tolerance)``). A result stored without fingerprints (before them, or in a
    database lacking their rows) is judged by its source hash instead of the last two."""
    from pebench.engine.fingerprint import encoding_fingerprint, probe_deviation, task_fingerprint

    enc_cls, task_cls = encodings.get(row.encoding), tasks.get(row.task)
    run = (runs or {}).get(int(getattr(row, "run_id", -1) or -1))
    config = getattr(row, "config", None)
    why = [d] if config and (d := drift(config, stored_case(row), run)) else []
    enc_fp, task_fp = getattr(row, "encoding_fingerprint", ""), getattr(row, "task_fingerprint", "")
    if not (enc_fp in stored and task_fp in stored):
        now = code_version(enc_cls, task_cls)
        if row.code_version != now:
            why.append(f"trained by code {row.code_version or 'unrecorded'}, this pebench is {now} "
                       "(no fingerprint recorded)")  # fmt: skip
        return "; ".join(why)
    task_row, enc_row = stored[task_fp], stored[enc_fp]
    now_task = task_fingerprint(tasks.build(row.task, task_row["options"]))["digest"]
    if now_task != task_fp:
        why.append(f"task data changed (digest {task_fp[:8]} -> {now_task[:8]})")
    deviation = probe_deviation(enc_row["values"], encoding_fingerprint(row.encoding, enc_row["options"])["values"])
    if deviation > 1.0:
        why.append(f"computes otherwise (probe {deviation:.3g} x the tolerance)")
    return "; ".join(why)
