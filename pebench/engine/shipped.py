"""The fingerprints pebench ships for its own encodings and tasks (``pebench/data/fingerprints.json``), so that reading
a database -- ``pebench results --stale``, ``pebench report --with-reference`` -- never trains a probe on a machine
whose cache is cold.

Each shipped row (:func:`pebench.engine.fingerprint.encoding_fingerprint`'s or :func:`~pebench.engine.fingerprint.
task_fingerprint`'s) is keyed by what it was computed for (kind, class, configuration, :data:`~pebench.engine.
fingerprint.PROBE_VERSION`) and stored with the digest of the source it was computed from (:func:`source_digest`: the
bytes of every file of the package the computation can reach, followed through imports from the fingerprint module
and the class's own module; an encoding's or task's module counts only for its own rows). A row is used only where the
installed files hash the same, so an edited checkout, a plugin or another probe version computes what it cannot trust.
``tests/engine/test_shipped.py`` checks in CI that every shipped row is current and is what this code computes;
``python -m pebench.engine.shipped --write`` recomputes the stale rows (studies/fingerprints/README.md).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import io
import json
import tokenize
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pebench.hashing import canonical_json

PACKAGE = Path(__file__).resolve().parents[1]
SHIPPED = PACKAGE / "data" / "fingerprints.json"
BARRIERS = frozenset({"encodings/__init__.py", "tasks/__init__.py"})
"""Package ``__init__`` files whose imports are not followed: they import every registered entry."""
BESIDE = frozenset({"engine/shipped.py", "engine/machine_cache.py"})
"""Files the fingerprint module imports that take no part in what it computes (where its rows are kept)."""


def _module_file(name: str) -> Path | None:
    if name != "pebench" and not name.startswith("pebench."):
        return None
    parts = name.split(".")[1:]
    base = PACKAGE.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


@functools.cache
def _imports(path: Path) -> tuple[Path, ...]:
    """The package's files that ``path`` imports (anywhere in it, functions included)."""
    found: set[Path] = set()
    for node in ast.walk(ast.parse(path.read_bytes())):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        for name in names:
            while name:
                target = _module_file(name)
                if target is not None:
                    found.add(target)
                    break
                name = name.rpartition(".")[0]
    return tuple(sorted(found))


def closure(starts: Iterable[Path]) -> list[Path]:
    """Every package file reachable from ``starts`` through imports (not through :data:`BARRIERS`), sorted."""
    seen: set[Path] = set()
    todo = [p.resolve() for p in starts]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        if str(path.relative_to(PACKAGE)) not in BARRIERS:
            todo.extend(_imports(path))
    return sorted(seen)


def _class_files(cls: type) -> list[Path]:
    files = []
    for klass in (*cls.__mro__, getattr(cls, "inner_cls", None)):
        module = getattr(klass, "__module__", "") if isinstance(klass, type) else ""
        path = _module_file(module)
        if path is not None:
            files.append(path)
    return files


@functools.cache
def source_digest(cls: type, references: tuple[type, ...] = ()) -> str:
    """SHA-256 of the code (:func:`code_text`, and the package paths) of every file a fingerprint of ``cls`` can
    depend on: the fingerprint module's import closure and that of ``cls``'s modules (its bases, an inner encoding's)
    and of the classes its options name (``references``: DroPE's ``base="rope"`` runs RoPE's code)."""
    h = hashlib.sha256()
    files = [f for c in (cls, *references) for f in _class_files(c)]
    for path in closure([PACKAGE / "engine" / "fingerprint.py", *files]):
        if str(path.relative_to(PACKAGE)) in BESIDE:
            continue
        h.update(str(path.relative_to(PACKAGE)).encode() + b"\0")
        h.update(code_text(path))
    return h.hexdigest()[:32]


@functools.cache
def code_text(path: Path) -> bytes:
    """The code of a source file without its documentation: its lines with every docstring (and bare string
    documenting an attribute) that fills lines of its own and every comment removed, trailing space stripped and
    blank lines dropped. The same on every Python version (strings found by their line numbers in the syntax tree,
    comments by the tokenizer), so editing the documentation keeps the shipped rows and editing the code does not;
    the raw bytes where the file does not parse."""
    raw = path.read_bytes()
    try:
        tree = ast.parse(raw)
        comments = [t.start for t in tokenize.tokenize(io.BytesIO(raw).readline) if t.type == tokenize.COMMENT]
    except (SyntaxError, ValueError, tokenize.TokenError):
        return raw
    lines = raw.decode().splitlines()
    for row, col in sorted(comments, reverse=True):
        lines[row - 1] = lines[row - 1][:col]
    drop: set[int] = set()
    strings = [n for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)
               and isinstance(n.value.value, str)]  # docstrings and the bare strings documenting attributes
    for node in strings:
        start, end = node.lineno, node.end_lineno or node.lineno
        own = lines[start - 1][: node.col_offset].strip() == "" and \
            lines[end - 1][node.end_col_offset or 0 :].strip() == ""  # fmt: skip
        if own:
            drop.update(range(start, end + 1))
    kept = [line.rstrip() for i, line in enumerate(lines, 1) if i not in drop and line.strip()]
    return "\n".join(kept).encode()


def entry_key(kind: str, cls: type, config: str, version: str) -> str:
    """The key of a shipped row: what it was computed for, and the probe's definition (``version``,
    :data:`pebench.engine.fingerprint.PROBE_VERSION`)."""
    return hashlib.sha256(canonical_json([kind, cls.__module__, cls.__qualname__, config, version]).encode()
                          ).hexdigest()[:32]  # fmt: skip


def own(cls: type) -> bool:
    """Whether ``cls`` is pebench's own (its module inside the installed package), whose rows may ship."""
    return _module_file(getattr(cls, "__module__", "")) is not None


@functools.lru_cache(maxsize=1)
def table(path: Path = SHIPPED) -> dict[str, Any]:
    """The shipped rows by :func:`entry_key`, each ``{"source": ..., "row": ...}`` (empty when none ship)."""
    try:
        return dict(json.loads(path.read_text()).get("entries", {}))
    except (OSError, ValueError):
        return {}


def lookup(kind: str, cls: type, config: str, version: str, references: tuple[type, ...] = ()
           ) -> dict[str, Any] | None:  # fmt: skip
    """The shipped row of ``(kind, cls, config)`` at probe version ``version`` (whose options name the classes
    ``references``) when one was computed from the source installed now; else None."""
    if not own(cls) or not all(own(r) for r in references):
        return None
    entry = table().get(entry_key(kind, cls, config, version))
    if entry is None or entry.get("source") != source_digest(cls, references):
        return None
    return dict(entry["row"])


def entries(rows: Iterable[tuple[str, type, str, tuple[type, ...], Mapping[str, Any]]], version: str
            ) -> dict[str, Any]:  # fmt: skip
    """The table of ``(kind, cls, config, references, row)`` at probe version ``version``: each row keyed and
    stamped with its source now."""
    return {entry_key(kind, cls, config, version): {"kind": kind, "class": f"{cls.__module__}.{cls.__qualname__}",
                                           "config": config, "source": source_digest(cls, refs), "row": dict(row)}
            for kind, cls, config, refs, row in rows}  # fmt: skip
