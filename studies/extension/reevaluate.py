"""Put the extension track's re-evaluated runs in place of the shipped reference's (runs 9-25), keeping their ids.

Why: the track's results were evaluated before the position probe became cross-validated (docs/diagnostics.md,
2026-12-05), so their stored ``position_probe`` followed the first definition. Re-running ``track.sh`` with the
checkpoint cache of the track trains nothing and evaluates every model again with the current diagnostics. This
script then checks that every re-evaluated result has the stored result's score and loss bit for bit (same models,
same evaluation data: anything else aborts, writing nothing), deletes the reference's track runs, merges the new ones
as ``finish.sh`` does (one run per task and protocol, the scaffold shards as one), gives them the ids the old ones
had, and writes the reference back in rollback-journal mode, vacuumed.

    PEBENCH_TRACK_CACHE=... bash studies/extension/track.sh ...   # every task, then scaffold 1/3, 2/3, 3/3
    python studies/extension/reevaluate.py                          # from the repository root
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from pebench.analysis.page_data import extended

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "pebench" / "data" / "reference.db"
KEY = "encoding, task, point, eval_length, seed"


def _key(options: dict) -> tuple:
    return options.get("task"), options.get("encoding"), bool(options.get("pose")), options.get("scaffold")


def track_runs(db: sqlite3.Connection) -> dict[tuple, int]:
    """The runs of a second phase (``--extend``, ``--scaffold``) in ``db``: (task, encoding, PoSE, scaffold) -> id."""
    runs = {}
    for rid, options in db.execute("select id, options from runs order by id"):
        o = json.loads(options or "{}")
        if extended(o):
            runs[_key(o)] = rid
    return runs


def parts(folder: Path) -> list[list[str]]:
    """``finish.sh``'s grouping: per (task, encoding, PoSE, scaffold) the newest finished run of each database."""
    groups: dict[tuple, list[str]] = defaultdict(list)
    for path in sorted(folder.glob("track_*.db")):
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        newest = {}
        for rid, options in db.execute("select id, options from runs where status = 'finished' order by id"):
            newest[_key(json.loads(options or "{}"))] = rid
        for key, rid in newest.items():
            groups[key].append(f"{path}::{rid}")
        db.close()
    return [groups[key] for key in sorted(groups, key=str)]


def scores(db: sqlite3.Connection, runs: list[int]) -> dict[tuple, tuple]:
    marks = ",".join("?" * len(runs))
    rows = db.execute(f"select {KEY}, status, score, loss from results where run_id in ({marks})", runs).fetchall()
    return {tuple(r[:5]): tuple(r[5:]) for r in rows}


def main(folder: Path) -> int:
    work = REFERENCE.with_suffix(".reevaluated.db")
    shutil.copyfile(REFERENCE, work)
    db = sqlite3.connect(work)
    old = track_runs(db)
    ids = sorted(old.values())
    before = scores(db, ids)
    db.execute("pragma foreign_keys = off")
    marks = ",".join("?" * len(ids))
    db.execute(f"delete from curve_points where result_id in (select id from results where run_id in ({marks}))", ids)
    db.execute(f"delete from results where run_id in ({marks})", ids)
    db.execute(f"delete from runs where id in ({marks})", ids)
    db.commit()
    db.close()
    for group in parts(folder):
        subprocess.run([sys.executable, "-m", "pebench", "merge", "--slim", *group, "-o", f"sqlite:///{work}"],
                       check=True)  # fmt: skip
    db = sqlite3.connect(work)
    new = track_runs(db)
    if set(new) != set(old):
        sys.exit(f"the re-evaluated runs {sorted(new, key=str)} are not the stored {sorted(old, key=str)}: nothing "
                 "written")  # fmt: skip
    after = scores(db, sorted(new.values()))
    if after != before:
        moved = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        sys.exit(f"{len(moved)} results differ from the stored ones (first: {moved[:3]}): nothing written")
    db.execute("pragma foreign_keys = off")
    for key, new_id in new.items():  # the old ids were deleted: no other run holds them
        db.execute("update results set run_id = ? where run_id = ?", (old[key], new_id))
        db.execute("update runs set id = ? where id = ?", (old[key], new_id))
    db.commit()
    db.execute("pragma journal_mode = delete")
    db.execute("vacuum")
    db.close()
    work.replace(REFERENCE)
    print(f"runs {ids[0]}-{ids[-1]}: {len(before)} results re-evaluated, scores and losses unchanged bit for bit")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "studies" / "extension"))
