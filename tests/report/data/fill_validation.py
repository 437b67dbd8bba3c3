"""Brings ``fixed.db`` to schema revision 0004 in place and fills its learning curves' validation values
(``curve_points.val_1x`` and ``val_2x``) as the synthetic generator fills them (``synthetic.validation``), so the
golden pages show the validation charts. Run once when the columns were added (the rest of the file unchanged):

    PYTHONPATH=. python tests/report/data/fill_validation.py
"""

import sqlite3
from pathlib import Path

from sqlalchemy import create_engine, text

from pebench.report import synthetic
from pebench.store.migrate import upgrade_database

PATH = Path(__file__).resolve().parent / "fixed.db"


def main() -> None:
    engine = create_engine(f"sqlite:///{PATH}")
    upgrade_database(engine, str(PATH))
    with engine.begin() as conn:
        rows = conn.execute(text("select c.id, c.loss, c.accuracy, r.metric, r.higher_is_better, r.encoding from "
                                 "curve_points c join results r on r.id = c.result_id")).all()  # fmt: skip
        for cid, loss, accuracy, metric, hib, enc in rows:
            vals = synthetic.validation({"loss": loss, "accuracy": accuracy}, metric, bool(hib), enc)
            conn.execute(text("update curve_points set val_1x = :a, val_2x = :b where id = :id"),
                         {"a": vals[f"val_{metric}_1x"], "b": vals[f"val_{metric}_2x"], "id": cid})  # fmt: skip
    engine.dispose()
    with sqlite3.connect(PATH) as conn:  # one self-contained file: no WAL beside it
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.execute("VACUUM")
    print(f"upgraded {PATH} and filled the validation values of {len(rows)} curve points")


if __name__ == "__main__":
    main()
