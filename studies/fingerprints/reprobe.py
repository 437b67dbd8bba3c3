"""Store this pebench's probe with the results of encodings whose probe changed while their runs did not: a change
that makes the float64 probe more exact (no float32 step left inside it) moves the probe without moving the runs'
float32 computation. The script checks the latter itself, then re-stamps.

    # the float32 probes of the code before the change (fp32_identity.py, from a worktree of it):
    PYTHONPATH=/tmp/before python studies/fingerprints/fp32_identity.py --out before.json
    # then, with this checkout's code:
    python studies/fingerprints/reprobe.py --db sqlite:///pebench/data/reference.db \\
        --encodings ssmax_nope,ssmax_rope --fp32-before before.json

For each named encoding its float32 probe by this checkout must equal ``before.json``'s bit for bit (else it stops,
changing nothing); then its results' fingerprints are cleared and stamped anew
(:func:`pebench.store.fingerprints.stamp`, accepting their stored source hashes), the probes no result names any more
are deleted and the file is vacuumed.
First used for SSMax's log n (2026-12-03): a float32 ``log`` inside the float64 probe differed by an ulp between an
AMD EPYC (AVX2) and an Intel Xeon (AVX512), 21x the probe's tolerance.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--encodings", required=True, help="comma-separated")
    parser.add_argument("--fp32-before", type=Path, required=True, help="fp32_identity.py's file of the code before")
    args = parser.parse_args()
    from sqlalchemy import delete, select, text, update
    from sqlalchemy.orm import Session

    from pebench.engine.fingerprint import encoding_probe
    from pebench.store.database import open_db
    from pebench.store.fingerprints import stamp
    from pebench.store.schema import Fingerprint, Result

    names = args.encodings.split(",")
    before = json.loads(args.fp32_before.read_text())["probes"]
    torch.set_num_threads(1)
    moved = [n for n in names if encoding_probe(n, dtype=torch.float32) != before.get(n)]
    if moved:
        sys.exit(f"reprobe: the float32 computation of {', '.join(moved)} changed: rebuild those cells instead")
    engine = open_db(args.db, create=False)
    with engine.connect() as conn:
        rows = conn.execute(select(Result.encoding, Result.task, Result.code_version)
                            .where(Result.encoding.in_(names))).all()  # fmt: skip
    accepted: dict[tuple[str, str], set[str]] = {}
    for enc, task, code in rows:
        accepted.setdefault((enc, task), set()).add(code)
    with Session(engine) as s, s.begin():
        s.execute(update(Result).where(Result.encoding.in_(names)).values(encoding_fingerprint="", task_fingerprint=""))
    done, left = stamp(engine, accepted, progress=None)
    with Session(engine) as s, s.begin():
        named = select(Result.encoding_fingerprint).union(select(Result.task_fingerprint))
        gone = s.execute(delete(Fingerprint).where(Fingerprint.kind == "encoding", Fingerprint.name.in_(names),
                                                   Fingerprint.digest.not_in(named)))  # fmt: skip
    with engine.connect() as conn:
        conn.execution_options(isolation_level="AUTOCOMMIT").execute(text("VACUUM"))
    engine.dispose()
    print(
        f"{done} results of {', '.join(names)} stamped with this pebench's probe ({left} left); "
        f"{gone.rowcount} old probes deleted"
    )


if __name__ == "__main__":
    main()
