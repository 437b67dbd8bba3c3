"""The stored behavioural fingerprints (table ``fingerprints``, :mod:`pebench.engine.fingerprint`): written with the
results that name them, read by the stale check, ``--reuse`` and ``pebench merge``.

A fingerprint is stored once under its digest; a result names its encoding's probe and its task's data digest
(``results.encoding_fingerprint``, ``results.task_fingerprint``). Writing one that is there already is a no-op, also
when two writers store the same digest at the same instant (the second's insert is rolled back to a savepoint)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import exc as sa_exc
from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from pebench.hashing import canonical_json
from pebench.store.schema import Fingerprint

COLUMNS = ("digest", "kind", "name", "options", "values", "machine")


def store_fingerprints(session: Session, rows: Iterable[Mapping[str, Any]]) -> None:
    """Add each fingerprint row (a mapping of :data:`COLUMNS`) that ``session``'s database does not hold yet."""
    for row in rows:
        if not row.get("digest") or session.get(Fingerprint, row["digest"]) is not None:
            continue
        try:
            with session.begin_nested():
                session.add(Fingerprint(**{c: row.get(c) for c in COLUMNS if row.get(c) is not None}))
        except sa_exc.IntegrityError:  # stored meanwhile by another writer: the same row
            pass


def load_fingerprints(engine: Engine, digests: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
    """The stored fingerprints (all, or those of ``digests``) as digest -> row mapping of :data:`COLUMNS`."""
    wanted = None if digests is None else sorted({d for d in digests if d})
    query = select(*(getattr(Fingerprint, c) for c in COLUMNS))
    out: dict[str, dict[str, Any]] = {}
    with engine.connect() as conn:
        chunks = [None] if wanted is None else [wanted[i : i + 500] for i in range(0, len(wanted), 500)]
        for chunk in chunks:
            q = query if chunk is None else query.where(Fingerprint.digest.in_(chunk))
            for row in conn.execute(q):
                out[row.digest] = dict(zip(COLUMNS, row, strict=True))
    return out


def stamp(engine: Engine, source_versions: Mapping[tuple[str, str], set[str]] | None = None,
          progress: Any = print) -> tuple[int, int]:  # fmt: skip
    """Record this pebench's fingerprints with the results stored without them whose code this pebench provably
    is: their ``code_version`` is the source hash this pebench computes for their (encoding, task) (or one of
    ``source_versions[(encoding, task)]``, source hashes shown elsewhere to compute the same). Returns (results
    stamped, results left without: trained by other source). One transaction: all or nothing."""
    from sqlalchemy import update

    from pebench import encodings, tasks
    from pebench.engine.code import code_version
    from pebench.engine.fingerprint import encoding_fingerprint, task_fingerprint
    from pebench.store.schema import Result

    with engine.connect() as conn:
        rows = conn.execute(select(Result.id, Result.encoding, Result.task, Result.code_version, Result.config)
                            .where(Result.encoding_fingerprint == "")).all()  # fmt: skip
    done, left, groups = 0, 0, {}
    for rid, enc, task, code, config in rows:
        key = (enc, task, code, canonical_json(config["encoding"].get("options", {})),
               canonical_json(config["task"].get("options", {})))
        groups.setdefault(key, []).append(rid)
    shown = source_versions or {}
    with Session(engine) as s, s.begin():
        for n, ((enc, task, code, enc_opts, task_opts), ids) in enumerate(sorted(groups.items())):
            accepted = {code_version(encodings.get(enc), tasks.get(task)), *shown.get((enc, task), ())}
            if code not in accepted:
                left += len(ids)
                continue
            enc_fp = encoding_fingerprint(enc, json.loads(enc_opts))
            task_fp = task_fingerprint(tasks.build(task, json.loads(task_opts)))
            store_fingerprints(s, [enc_fp, task_fp])
            s.execute(update(Result).where(Result.id.in_(ids)).values(encoding_fingerprint=enc_fp["digest"],
                                                                       task_fingerprint=task_fp["digest"]))  # fmt: skip
            done += len(ids)
            if progress is not None and (n + 1) % 100 == 0:
                progress(f"  {n + 1}/{len(groups)} cells fingerprinted")
    return done, left
