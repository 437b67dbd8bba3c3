"""Write (or check) the fingerprints pebench ships: ``pebench/data/fingerprints.json`` (:mod:`pebench.engine.shipped`).

The rows wanted: every encoding probe and task digest the shipped reference's results point to (their stored names
and options), and every registered encoding and task at its default options (what a default run records). A row whose
shipped source is still the installed one is kept as it is; the others are computed here (the probes of 44 encodings
and 36 task digests: about 30 s on a quiet 2-core machine, from scratch).

    python studies/fingerprints/ship.py            # recompute the stale rows and write the file
    python studies/fingerprints/ship.py --check    # exit 1, listing them, when a wanted row is missing or stale

``tests/engine/test_shipped.py`` runs the check in CI and recomputes every shipped row against this code.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pebench import encodings, tasks
from pebench.case import Case
from pebench.encodings.registry import not_applicable
from pebench.engine import fingerprint, shipped
from pebench.engine.configuration import describe
from pebench.engine.settings import Settings
from pebench.hashing import canonical_json

REFERENCE = shipped.PACKAGE / "data" / "reference.db"


def _reference_rows(url: str) -> list[tuple[str, str, dict[str, Any]]]:
    from pebench.store.database import open_db
    from pebench.store.load import load_light

    engine = open_db(url, create=False)
    try:
        df = load_light(engine)
        from pebench.store.fingerprints import load_fingerprints

        rows = load_fingerprints(engine, set(df["encoding_fingerprint"]) | set(df["task_fingerprint"]))
    finally:
        engine.dispose()
    return sorted({(r["kind"], r["name"], canonical_json(r["options"] or {})) for r in rows.values()})  # type: ignore[misc]


def _defaults() -> Iterator[tuple[str, str, str]]:
    settings = Settings()
    for name in tasks.available():
        yield "task", name, canonical_json(tasks.build(name).opts)
    for name in encodings.available():
        for task_name in tasks.available():
            task = tasks.build(task_name)
            if not_applicable(name, task) is None:
                config = describe(settings, task, Case(name, task_name, task.train_length))
                yield "encoding", name, canonical_json(config["encoding"]["options"])
                break


def wanted(url: str) -> list[tuple[str, str, dict[str, Any]]]:
    """The (kind, name, options) of every row to ship, sorted."""
    seen = set(_reference_rows(url)) | set(_defaults())
    return [(kind, name, json.loads(opts)) for kind, name, opts in sorted(seen)]


def _key(kind: str, name: str, options: dict[str, Any]) -> tuple[str, type, str, tuple[type, ...]]:
    if kind == "encoding":
        cls = encodings.get(name)
        return kind, cls, f"{name}:{canonical_json(options)}", fingerprint.references(options)
    task = tasks.build(name, options)
    return kind, type(task), canonical_json(task.config()), ()


def stale(rows: list[tuple[str, str, dict[str, Any]]]) -> list[str]:
    """The wanted rows not shipped from the source installed now."""
    out = []
    for kind, name, opts in rows:
        _, cls, config, refs = _key(kind, name, opts)
        if shipped.lookup(kind, cls, config, fingerprint.PROBE_VERSION, refs) is None:
            out.append(f"{kind} {name} {canonical_json(opts)}")
    return out


def compute(rows: list[tuple[str, str, dict[str, Any]]]) -> dict[str, Any]:
    """The table of ``rows``, each shipped row kept where current, else computed (progress on stderr)."""
    out = []
    start = time.perf_counter()
    for n, (kind, name, opts) in enumerate(rows, 1):
        if kind == "encoding":
            row = fingerprint.encoding_fingerprint(name, opts)
        else:
            row = fingerprint.task_fingerprint(tasks.build(name, opts))
        k, cls, config, refs = _key(kind, name, opts)
        out.append((k, cls, config, refs, row))
        print(f"\r[{n}/{len(rows)}] {kind} {name} ({time.perf_counter() - start:.0f} s)", end="", file=sys.stderr)
    print(file=sys.stderr)
    return shipped.entries(out, fingerprint.PROBE_VERSION)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", default=f"sqlite:///{REFERENCE}", help="the reference whose rows ship (default: shipped)")
    p.add_argument("--check", action="store_true", help="list the missing or stale rows; exit 1 when there are any")
    p.add_argument("-o", "--output", type=Path, default=shipped.SHIPPED)
    args = p.parse_args(argv)
    rows = wanted(args.db)
    missing = stale(rows)
    if args.check:
        for line in missing:
            print(f"not shipped from this source: {line}")
        print(f"{len(rows) - len(missing)} of {len(rows)} wanted fingerprint rows ship from this source"
              + ("" if not missing else "; run python studies/fingerprints/ship.py"))  # fmt: skip
        return 1 if missing else 0
    table = compute(rows)
    args.output.write_text(json.dumps({"probe_version": fingerprint.PROBE_VERSION, "entries": table},
                                      sort_keys=True, indent=0) + "\n")  # fmt: skip
    print(f"{args.output}: {len(table)} rows ({len(missing)} computed anew), {args.output.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
