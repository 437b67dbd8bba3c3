"""Record the behavioural fingerprints with the results of a database stored before them (the shipped reference):
each result whose source hash is this checkout's, or that of a commit whose code computes the same bit for bit in
float32 (checked with fp32_identity.py, its files committed beside this script), gets this pebench's fingerprints.

    # the source hashes of commit C's code, from a worktree of it:
    PYTHONPATH=/tmp/before python studies/fingerprints/stamp_reference.py --versions-out versions_C.json
    # then, with this checkout's code:
    python studies/fingerprints/stamp_reference.py --db sqlite:///pebench/data/reference.db --versions versions_C.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--versions-out", type=Path, help="write every (encoding, task)'s source hash and stop")
    parser.add_argument("--db", help="the database to stamp (upgraded to the current schema first)")
    parser.add_argument("--versions", type=Path, help="source hashes accepted besides this checkout's")
    args = parser.parse_args()
    from pebench import encodings, tasks
    from pebench.engine.code import code_version

    if args.versions_out is not None:
        table = {f"{e}|{t}": code_version(encodings.get(e), tasks.get(t))
                 for e in encodings.available() for t in tasks.available()}  # fmt: skip
        args.versions_out.write_text(json.dumps(table, indent=0, sort_keys=True) + "\n")
        return
    from pebench.store.database import open_db
    from pebench.store.fingerprints import stamp

    accepted = {}
    if args.versions is not None:
        accepted = {tuple(k.split("|")): {v} for k, v in json.loads(args.versions.read_text()).items()}
    subprocess.run([sys.executable, "-m", "pebench", "db", "upgrade", "--db", args.db], check=True)
    engine = open_db(args.db, create=False)
    start = time.perf_counter()
    done, left = stamp(engine, accepted)
    engine.dispose()
    print(f"{done} results fingerprinted, {left} left (trained by other source) in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
