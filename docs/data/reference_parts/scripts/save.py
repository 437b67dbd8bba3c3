"""Copy the live result databases into the repository (SQLite's online backup: consistent while being written); the
reference's parts are saved slim (as ``pebench merge --slim`` keeps them)."""

import json
import sqlite3
from pathlib import Path

from pebench.store.load import curve_owners
from pebench.store.merge import thin

REPO = Path("/work/main")
PAIRS = {
    "/work/lrdata/a.db": "docs/data/lr_sweep/a.db",
    "/work/lrdata/b.db": "docs/data/lr_sweep/b.db",
    "/work/lrdata/c.db": "docs/data/lr_sweep/c.db",
    "/work/lrdata/d.db": "docs/data/lr_sweep/d.db",
    "/work/lrdata/field2026.db": "docs/data/field2026.db",
    "/work/lrdata/core32.db": "docs/data/core_issue32.db",
    "/work/lrdata/core32b.db": "docs/data/core_issue32b.db",
    "/work/lrdata/core32c.db": "docs/data/core_issue32c.db",
}


def slim_copy(path: Path) -> None:
    """A reference part as ``pebench merge --slim`` would keep it (attention dropped, each model's curve once at its
    training length, thinned), so that the git history does not grow by the full curves at each save; still a valid
    part for ``pebench merge``."""
    db = sqlite3.connect(path)
    rows = db.execute("SELECT id, encoding, task, train_length, eval_length, seed, config_hash, metrics, run_id "
                      "FROM results").fetchall()  # fmt: skip
    names = ("id", "encoding", "task", "train_length", "eval_length", "seed", "config_hash")
    keep_ids: set[int] = set()  # per run: a resumed shard's newest run holds copies of the earlier run's results
    for run in {r[8] for r in rows}:
        keep_ids |= set(curve_owners([dict(zip(names, r[:7], strict=True)) for r in rows if r[8] == run]).values())
    for r in rows:
        m = json.loads(r[7]) if r[7] else None
        if isinstance(m, dict) and "attention" in m:
            m.pop("attention")
            db.execute("UPDATE results SET metrics=? WHERE id=?", (json.dumps(m), r[0]))
    cols = [c[1] for c in db.execute("PRAGMA table_info(curve_points)")]
    for rid in {r[0] for r in rows}:
        query = "SELECT * FROM curve_points WHERE result_id=? ORDER BY step"
        pts = [dict(zip(cols, p, strict=True)) for p in db.execute(query, (rid,))]
        kept = {p["id"] for p in thin(pts)} if rid in keep_ids else set()
        db.executemany("DELETE FROM curve_points WHERE id=?", [(p["id"],) for p in pts if p["id"] not in kept])
    db.commit()
    db.execute("VACUUM")
    db.close()


def state(path: Path) -> tuple[object, ...]:
    """(newest run, its status, its result count) of a part, to tell whether a saved copy is current."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    run, status = db.execute("SELECT id, status FROM runs ORDER BY id DESC LIMIT 1").fetchone() or (None, None)
    n = db.execute("SELECT count(*) FROM results WHERE run_id=?", (run,)).fetchone()[0]
    db.close()
    return run, status, n


def main() -> None:
    pairs = dict(PAIRS)
    for part in sorted(Path("/work/lrdata/ref").glob("*.db")):  # the reference's shards (issue 29), until merged
        pairs[str(part)] = f"docs/data/reference_parts/{part.name}"
    for src, dst in pairs.items():
        if not Path(src).exists():
            continue
        out = REPO / dst
        saved = state(out) if "reference_parts" in dst and out.exists() else None
        if saved is not None and saved[1] == "finished" and state(Path(src)) == saved:
            continue  # a finished part saved already: a fresh copy would differ only in bytes, growing the history
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".tmp")
        s, d = sqlite3.connect(f"file:{src}?mode=ro", uri=True), sqlite3.connect(tmp)
        s.backup(d)
        d.execute("PRAGMA journal_mode=DELETE")
        d.commit()
        d.close()
        s.close()
        if "reference_parts" in dst:
            slim_copy(tmp)
        tmp.replace(out)
        print(dst, out.stat().st_size)


if __name__ == "__main__":
    main()
