"""Writes ``tests/report/data/fixed.db``: the fixed results database that the report and compare golden tests read.

Made once with the synthetic generator (``pebench.report.synthetic``, clearly fake scores) and committed, so the
database does not change when the generator does. Four runs: 1-3 of five encodings on four tasks (accuracy, exact
match with evaluation splits, exact match with two in-distribution lengths, perplexity) and two seeds, run 3 with a
diverged and an errored case and one encoding on fewer tasks; run 4 a small run in which one encoding has another
config.

    python tests/report/data/make_fixed_db.py [OUT]   # rewrites fixed.db, or writes OUT
                                                      # (then regenerate the golden files)

The committed file was later brought to schema revision 0004 with its validation values filled by
``fill_validation.py``; a database written now has the current revision and the generator's validation values
(``tests/report/test_fixed_db.py`` checks that this script still runs).
"""

import datetime as dt
import sqlite3
import sys
from pathlib import Path

from sqlalchemy import update

from pebench import store
from pebench.report import synthetic
from pebench.report.synthetic import SynthSpec, SynthTask

HERE = Path(__file__).resolve().parent
ENCODINGS = ("nope", "rope", "alibi", "learned", "t5")
TASKS = (
    SynthTask("k_back", 64, (64, 128, 256), chance=0.02, vocab=50),
    SynthTask("copy", 12, (8, 12, 24, 48), metric="exact_match", chance=1e-4, vocab=12),
    SynthTask("passkey", 64, (64, 128, 256), metric="exact_match", chance=1e-5, vocab=14,
              splits=("uniform", "depth0.00", "depth0.50", "depth1.00")),
    SynthTask("lm", 64, (64, 128, 256), metric="perplexity", chance=256.0, vocab=260),
)  # fmt: skip


def _records(spec: SynthSpec, offset: float, rng_seed: int) -> list[dict]:
    recs = synthetic.records(spec, offset, rng_seed)
    for rec in recs:  # an exact-match task's score is its sequence accuracy
        if rec["metric"] == "exact_match" and rec["status"] == "ok":
            rec["score"] = rec["sequence_accuracy"]
    return recs


def main(path: Path = HERE / "fixed.db") -> None:
    path.unlink(missing_ok=True)
    engine = store.open_db(f"sqlite:///{path}")
    base = SynthSpec(ENCODINGS, TASKS, seeds=2, curve_points=8, attention_tokens=12)
    failing = SynthSpec(ENCODINGS, TASKS, seeds=2, curve_points=8, attention_tokens=12, statuses={
        ("alibi", "k_back", 256, 1): ("diverged", "non-finite training loss (nan) at step 412"),
        ("t5", "copy", 48, 0): ("error", "RuntimeError: <b>out of memory</b> & more"),
    })  # fmt: skip
    run3 = [r for r in _records(failing, -0.03, 3) if not (r["encoding"] == "learned" and r["task"] == "lm")]
    small = SynthSpec(("nope", "rope"), TASKS[:1], seeds=2, curve_points=8, attention_tokens=12)
    other = SynthSpec(("alibi",), TASKS[:1], seeds=2, curve_points=8, attention_tokens=12, steps=1200)
    runs = [_records(base, 0.0, 1), _records(base, 0.02, 2), run3, _records(small, 0.05, 4) + _records(other, 0, 5)]
    start = dt.datetime(2026, 11, 1, 2, 0)
    for i, recs in enumerate(runs):
        run_id = synthetic.write_run(engine, recs, {"started_at": start + dt.timedelta(days=i)})
        with store.session_scope(engine) as s:
            s.execute(update(store.Run).where(store.Run.id == run_id).values(
                finished_at=start + dt.timedelta(days=i, hours=1), command=f"pytest suite  # fixed run {run_id}"))
            s.execute(update(store.Result).where(store.Result.run_id == run_id).values(
                created_at=start + dt.timedelta(days=i, minutes=30)))
    engine.dispose()
    with sqlite3.connect(path) as conn:  # one self-contained file: no WAL beside it
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.execute("VACUUM")
    print(f"wrote {path} ({path.stat().st_size / 1e3:.0f} kB)")


if __name__ == "__main__":
    main(*(Path(a) for a in sys.argv[1:2]))
