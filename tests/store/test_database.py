"""The results store: schema, atomic writes, provenance, bad URLs, load() -- on SQLite and on a real PostgreSQL
server (the ``db_url`` fixture)."""

import math

import pytest
from sqlalchemy import create_engine, inspect, text

from pebench import store as db
from pebench.errors import DatabaseError
from pebench.store.load import load

RECORD = {
    "case_id": "rope-k_back-L64",
    "encoding": "rope",
    "encoding_version": "1",
    "task": "k_back",
    "task_version": "1",
    "train_length": 64,
    "eval_length": 64,
    "seed": 0,
    "config": {"model": {"d_model": 8}},
    "config_hash": "abc",
    "status": "ok",
    "score": 0.5,
    "token_accuracy": 0.5,
    "curve": [{"step": 1, "loss": 2.0, "accuracy": 0.1}, {"step": 2, "loss": 1.0, "accuracy": 0.4}],
}

RUN = {
    "package_version": "0",
    "torch_version": "t",
    "python_version": "3",
    "device": "cpu",
    "host": "h",
    "git_commit": "deadbeef",
    "git_dirty": True,
}


def _count(url: str, table: str) -> int:
    engine = create_engine(url)
    with engine.connect() as conn:
        n = conn.execute(text(f"select count(*) from {table}")).scalar_one()
    engine.dispose()
    return int(n)


def test_write_and_load_roundtrip(db_url):
    url = db_url
    engine = db.open_db(url)
    run_id = db.start_run(engine, RUN)
    rid = db.add_result(engine, run_id, RECORD)
    db.finish_run(engine, run_id, "finished")
    df = load(url)
    assert len(df) == 1
    row = df.iloc[0]
    assert row["id"] == rid and row["run_id"] == run_id
    assert row["case_id"] == "rope-k_back-L64" and row["score"] == 0.5
    assert row["config"] == {"model": {"d_model": 8}}
    assert row["run_git_commit"] == "deadbeef" and bool(row["run_git_dirty"]) is True
    assert row["run_status"] == "finished"
    raw = create_engine(url)
    with raw.connect() as conn:
        points = conn.execute(text("select step, loss from curve_points order by step")).all()
        assert [tuple(p) for p in points] == [(1, 2.0), (2, 1.0)]
        if raw.dialect.name == "sqlite":
            assert conn.exec_driver_sql("pragma journal_mode").scalar_one() == "wal"
        else:  # PostgreSQL: the JSON columns are jsonb
            types = {c["name"]: str(c["type"]) for c in inspect(conn).get_columns("results")}
            assert types["config"] == "JSONB" and types["metrics"] == "JSONB"
    raw.dispose()


def test_non_finite_values_are_stored_and_read_back(db_url):
    """A diverged evaluation's inf/nan, in float columns and inside the metrics JSON (PostgreSQL rejects the
    ``Infinity`` token of Python's json module)."""
    engine = db.open_db(db_url)
    run_id = db.start_run(engine, RUN)
    db.add_result(engine, run_id, dict(RECORD, status="diverged", loss=math.inf, score=math.nan,
                                       metrics={"loss": math.inf, "per_length": [-math.inf, 1.5], "ppl": math.nan}))
    engine.dispose()
    row = load(db_url).iloc[0]
    assert row["loss"] == math.inf and row["score"] is None  # NaN in a column: no score, on every backend
    assert row["metrics"]["loss"] == math.inf and row["metrics"]["per_length"] == [-math.inf, 1.5]
    assert math.isnan(row["metrics"]["ppl"])


def test_failed_write_leaves_nothing(db_url):
    engine = db.open_db(db_url)
    run_id = db.start_run(engine, RUN)
    bad = dict(RECORD, curve=[{"step": 1, "loss": 1.0}, {"loss": 2.0}])  # second point has no step
    with pytest.raises(KeyError):
        db.add_result(engine, run_id, bad)
    engine.dispose()
    assert _count(db_url, "results") == 0 and _count(db_url, "curve_points") == 0


def test_second_run_does_not_touch_first(db_url):
    url = db_url
    engine = db.open_db(url)
    first = db.start_run(engine, RUN)
    db.add_result(engine, first, RECORD)
    db.finish_run(engine, first, "finished")
    second = db.start_run(engine, RUN)
    db.add_result(engine, second, dict(RECORD, score=0.9))
    db.finish_run(engine, second, "finished")
    df = load(url)
    assert sorted(df["run_id"]) == [first, second]
    assert df.set_index("run_id").loc[first, "score"] == 0.5
    assert len(load(url, run="latest")) == 1 and load(url, run="latest").iloc[0]["score"] == 0.9
    assert load(url, run="previous").iloc[0]["run_id"] == first


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("not a url", "not a database URL"),
        ("sqlite:////nonexistent-dir-xyz/r.db", "does not exist"),
        ("nosuchdialect://x/y", "cannot be opened"),
    ],
)
def test_bad_urls(url, fragment):
    with pytest.raises(DatabaseError, match=fragment):
        db.open_db(url)


def test_file_that_is_not_a_database(tmp_path):
    path = tmp_path / "notes.db"
    path.write_text("this is plain text, not SQLite " * 100)
    with pytest.raises(DatabaseError, match="not a usable database"):
        db.open_db(f"sqlite:///{path}")
    assert path.read_text().startswith("this is plain text")


def test_unknown_run_ids(db_url):
    engine = db.open_db(db_url)
    with pytest.raises(DatabaseError, match="no latest run"):
        db.resolve_run_id(engine, "latest")
    run_id = db.start_run(engine, RUN)
    with pytest.raises(DatabaseError, match="unknown run id 99"):
        db.resolve_run_id(engine, 99)
    with pytest.raises(DatabaseError, match="not a run id"):
        db.resolve_run_id(engine, "yesterday")
    assert db.resolve_run_id(engine, str(run_id)) == run_id


def test_load_of_missing_file_is_an_error(tmp_path):
    with pytest.raises(DatabaseError, match="no such database file"):
        load(f"sqlite:///{tmp_path / 'missing.db'}")


def test_validation_values_of_curve_points_are_stored_and_read_back(db_url):
    """``val_<metric>_1x``/``_2x`` go to ``val_1x``/``val_2x`` and come back under the result's metric's name."""
    from sqlalchemy.orm import Session

    from pebench.records.record import curve_point

    curve = [{"step": 1, "loss": 2.0, "accuracy": 0.1, "val_accuracy_1x": 0.2, "val_accuracy_2x": 0.05},
             {"step": 2, "loss": 1.0, "accuracy": 0.4, "val_accuracy_1x": 0.5}]  # fmt: skip
    engine = db.open_db(db_url)
    run_id = db.start_run(engine, RUN)
    rid = db.add_result(engine, run_id, {**RECORD, "curve": curve})
    with Session(engine) as s:
        result = s.get(db.Result, rid)
        assert [curve_point(p, result.metric) for p in result.curve] == curve
    with engine.connect() as conn:
        rows = conn.execute(text("select step, val_1x, val_2x from curve_points order by step")).all()
    assert [tuple(r) for r in rows] == [(1, 0.2, 0.05), (2, 0.5, None)]
    engine.dispose()
