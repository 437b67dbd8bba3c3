"""The golden database can be made again: ``tests/report/data/make_fixed_db.py`` runs and writes the same results
(cases, statuses and scores of the four runs) as the committed ``fixed.db`` that the golden tests read."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pebench.results

DATA = Path(__file__).resolve().parent / "data"
COLUMNS = ["run_id", "encoding", "task", "eval_length", "seed", "status", "score"]


def test_the_script_writes_the_committed_results(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("make_fixed_db", DATA / "make_fixed_db.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    module.main(tmp_path / "fixed.db")
    made = pebench.results.load(f"sqlite:///{tmp_path / 'fixed.db'}")
    committed = pebench.results.load(f"sqlite:///{DATA / 'fixed.db'}")
    assert len(made) == len(committed) == 402 and sorted(made.run_id.unique()) == [1, 2, 3, 4]
    key = ["run_id", "encoding", "task", "eval_length", "seed"]
    a = made[COLUMNS].sort_values(key).reset_index(drop=True)
    b = committed[COLUMNS].sort_values(key).reset_index(drop=True)
    assert a.fillna(-1.0).equals(b.fillna(-1.0))
    assert not list(tmp_path.glob("fixed.db-*"))  # one self-contained file
