"""Schema revisions: older pebench databases upgraded (by a writer, or by ``pebench db upgrade``), read commands that
never write, foreign and newer databases refused untouched, concurrent first opens -- on SQLite and PostgreSQL."""

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, inspect, text

from pebench import store
from pebench.case import Point
from pebench.cli import main as cli_main
from pebench.errors import DatabaseError
from pebench.records.record import ResultRecord
from pebench.report.page import render_report
from pebench.store import migrate
from pebench.store.load import load
from pebench.store.schema import HEAD_REVISION, Base

ROOT = Path(__file__).resolve().parents[2]
LEGACY = Path(__file__).with_name("data") / "legacy-0002.db"
"""A database written by pebench before it carried revisions (the report's fixed database as it was then)."""
RUN_0001 = ("insert into runs (started_at, status, package_version, torch_version, python_version, device, host, "
            "platform, tier, options, command, schema_version) values ('2026-01-01 10:00:00', 'finished', '0.0', "
            "'t', '3', 'cpu', 'h', '', 'quick', '{}', 'pytest suite', 1)")  # fmt: skip
RESULT_0001 = ("insert into results (run_id, case_id, created_at, encoding, encoding_version, task, task_version, "
               "train_length, eval_length, seed, config, config_hash, status, message, metric, higher_is_better, "
               "score, model_reused, metrics) values (1, 'rope-k_back-L64', '2026-01-01 10:00:00', 'rope', '1', "
               "'k_back', '1', 64, 64, 0, '{\"model\": {}}', 'h1', 'ok', '', 'accuracy', true, 0.75, false, "
               "'{}')")  # fmt: skip


def _old_database(url: str, revision: str, with_revision: bool) -> None:
    """A database as pebench at ``revision`` wrote it, with one run and one result (``with_revision=False``: from
    before pebench carried revisions, so without ``alembic_version``)."""
    engine = create_engine(url)
    with engine.begin() as conn:
        command.upgrade(migrate._alembic_config(conn), revision)
        if not with_revision:
            conn.exec_driver_sql("DROP TABLE alembic_version")
        conn.exec_driver_sql(RUN_0001)
        conn.exec_driver_sql(RESULT_0001)
    engine.dispose()


def _schema_diffs(url: str) -> list:
    engine = create_engine(url)
    with engine.connect() as conn:
        diffs = compare_metadata(MigrationContext.configure(conn), Base.metadata)
        revision = MigrationContext.configure(conn).get_current_revision()
    engine.dispose()
    return [revision, diffs]


def _tables(url: str) -> set[str]:
    engine = create_engine(url)
    with engine.connect() as conn:
        names = set(inspect(conn).get_table_names())
    engine.dispose()
    return names


@pytest.mark.parametrize(("revision", "with_revision"), [("0001", False), ("0002", False), ("0002", True)])
def test_a_writer_upgrades_an_older_pebench_database_to_exactly_the_declared_schema(db_url, revision,
                                                                                    with_revision, capsys):  # fmt: skip
    _old_database(db_url, revision, with_revision)
    engine = store.open_db(db_url)  # a writer (the suite, pebench merge): every pending step only adds
    run = store.start_run(engine, {"package_version": "0", "torch_version": "t", "python_version": "3",
                                   "device": "cpu", "host": "h"})  # fmt: skip
    store.add_result(engine, run, {"case_id": "c", "encoding": "rope", "encoding_version": "1", "task": "k_back",
                                   "task_version": "1", "train_length": 64, "eval_length": 64, "seed": 0,
                                   "config": {}, "config_hash": "h2", "code_version": "abc"})  # fmt: skip
    engine.dispose()
    assert f"from schema revision {revision} to {HEAD_REVISION}" in capsys.readouterr().err
    assert _schema_diffs(db_url) == [HEAD_REVISION, []]
    df = load(db_url)
    assert list(df["score"])[0] == 0.75 and list(df["code_version"]) == ["", "abc"]  # the old row kept


def test_read_commands_never_write_and_name_the_upgrade(db_url, tmp_path, capsys):
    _old_database(db_url, "0001", with_revision=False)
    before = _tables(db_url)
    with pytest.raises(DatabaseError, match=r"schema revision 0001 .*pebench db upgrade --db"):
        load(db_url)
    for argv in (["results"], ["report", "-o", str(tmp_path / "p.html")], ["compare", "1", "1"]):
        assert cli_main([*argv, "--db", db_url]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "pebench db upgrade" in err and "s3cret" not in err
    assert _tables(db_url) == before  # no alembic_version, no new column: nothing was written
    assert cli_main(["db", "status", "--db", db_url]) == 1
    assert cli_main(["db", "upgrade", "--db", db_url]) == 0
    assert f"revision 0001 -> schema revision {HEAD_REVISION}" in capsys.readouterr().out
    assert cli_main(["db", "status", "--db", db_url]) == 0
    assert load(db_url)["score"].tolist() == [0.75]


@pytest.mark.slow
def test_the_database_of_the_previous_pebench_is_upgraded_by_pebench_db(tmp_path):
    path = tmp_path / "old.db"
    shutil.copy(LEGACY, path)
    url = f"sqlite:///{path}"
    proc = subprocess.run([sys.executable, "-m", "pebench", "db", "upgrade", "--db", url], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert _schema_diffs(url) == [HEAD_REVISION, []]
    assert render_report(url, tmp_path / "page.html", "all").n_results > 0


def _foreign(url: str) -> None:
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("create table invoices (id integer primary key, amount float)"))
        conn.execute(text("insert into invoices values (1, 9.5)"))
    engine.dispose()


def _fingerprint(url: str, tmp_path: Path) -> object:
    if url.startswith("sqlite"):
        files = sorted(p.name for p in tmp_path.iterdir())
        return files, hashlib.sha256((tmp_path / "results.db").read_bytes()).hexdigest()
    return _tables(url)


def test_a_foreign_database_is_refused_in_one_line_and_never_written(db_url, tmp_path, run_suite, tiny, capsys):
    _foreign(db_url)
    before = _fingerprint(db_url, tmp_path)
    for create in (True, False):
        with pytest.raises(DatabaseError, match="not a pebench results database .*invoices.*never writes"):
            store.open_db(db_url, create=create)
    for argv in (["results"], ["report", "-o", str(tmp_path.parent / "p.html")], ["db", "upgrade"],
                 ["merge", db_url, "-o", f"sqlite:///{tmp_path.parent / 'm.db'}"]):  # fmt: skip
        argv = argv if argv[0] == "merge" else [*argv, "--db", db_url]
        assert cli_main(argv) == 2, argv
        assert "not a pebench results database" in capsys.readouterr().err
    proc = run_suite("-k", "rope and k_back and L64", "--encoding", "rope", "--task", "k_back", "--db", db_url,
                     *tiny, inprocess=True)  # fmt: skip
    assert proc.returncode == 4 and "not a pebench results database" in proc.output
    assert "passed" not in proc.output  # refused before any case ran
    assert _fingerprint(db_url, tmp_path) == before


def test_a_database_of_a_newer_pebench_is_refused(db_url):
    engine = store.open_db(db_url)
    with engine.begin() as conn:
        conn.execute(text("update alembic_version set version_num = '9999'"))
    engine.dispose()
    for create in (True, False):
        with pytest.raises(DatabaseError, match="newer pebench .*9999"):
            store.open_db(db_url, create=create)


def test_an_empty_database_is_created_by_a_writer_and_refused_by_a_reader(db_url):
    if db_url.startswith("sqlite"):
        Path(db_url.removeprefix("sqlite:///")).touch()
    with pytest.raises(DatabaseError, match="empty database"):
        load(db_url)
    assert _tables(db_url) == set()
    store.open_db(db_url).dispose()
    assert _schema_diffs(db_url) == [HEAD_REVISION, []]


@pytest.mark.slow
def test_concurrent_first_opens_of_one_new_database(db_url):
    """Four processes open the same new database at once: all succeed, the tables are created once."""
    code = "import sys; from pebench.store.database import open_db; open_db(sys.argv[1]).dispose()"
    procs = [subprocess.Popen([sys.executable, "-c", code, db_url], stderr=subprocess.PIPE, text=True, cwd=ROOT)
             for _ in range(4)]  # fmt: skip
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    engine = create_engine(db_url)
    with engine.connect() as conn:
        assert conn.execute(text("select count(*) from alembic_version")).scalar_one() == 1
    engine.dispose()


def test_the_point_column_is_filled_from_the_case_ids_of_the_rows_already_stored(db_url):
    """Revision 0006 adds ``results.point`` and fills it for every stored row from its case id (the text after the
    length: ``lr0.001``, ``layers4-lr0.01``; none for a case at no point), on SQLite and PostgreSQL."""
    engine = create_engine(db_url)
    with engine.begin() as conn:
        command.upgrade(migrate._alembic_config(conn), "0005")
        conn.exec_driver_sql(RUN_0001)
        for case_id in ("rope-k_back-L64", "rope-k_back-L128-lr0.001", "alibi-k_back-L64-layers4-lr0.01"):
            conn.exec_driver_sql(RESULT_0001.replace("'rope-k_back-L64'", f"'{case_id}'"))
    engine.dispose()
    assert cli_main(["db", "upgrade", "--db", db_url]) == 0
    stored = dict(zip(*(load(db_url)[c] for c in ("case_id", "point")), strict=True))
    assert stored == {"rope-k_back-L64": "", "rope-k_back-L128-lr0.001": "lr0.001",
                      "alibi-k_back-L64-layers4-lr0.01": "layers4-lr0.01"}  # fmt: skip
    assert _schema_diffs(db_url) == [HEAD_REVISION, []]


def test_the_axes_column_is_filled_from_the_points_and_their_runs_sweeps(db_url):
    """Revision 0007 adds ``results.axes`` (the point as ``[[name, value], ...]`` in the sweep's order) and fills it
    for every stored row from its point, read with the axes its run swept (``sweep``, ``lr_sweep``), or for a run that
    stored none with the names its point's parts start with; a new result is written with its axes, which read back
    in their order (PostgreSQL's jsonb would reorder an object's keys), on SQLite and PostgreSQL."""
    runs = {1: '{"lr_sweep": "0.001,0.003", "sweep": []}', 2: '{"sweep": ["d_model=256"]}',
            3: '{"sweep": ["layers=4", "k_back:lr=0.01"]}', 4: "{}"}  # fmt: skip
    points = {"rope-k_back-L64": (1, ""), "rope-k_back-L128-lr0.001": (1, "lr0.001"),
              "nope-k_back-L64-d_model256": (2, "d_model256"), "alibi-k_back-L64-layers4-lr0.01": (3, "layers4-lr0.01"),
              "fire-k_back-L64-layers2-lr1e-05": (4, "layers2-lr1e-05")}  # fmt: skip
    engine = create_engine(db_url)
    with engine.begin() as conn:
        command.upgrade(migrate._alembic_config(conn), "0006")
        for options in runs.values():
            conn.exec_driver_sql(RUN_0001.replace("'{}'", f"'{options}'"))
        for case_id, (run, point) in points.items():
            conn.exec_driver_sql(RESULT_0001.replace("'rope-k_back-L64'", f"'{case_id}'")
                                 .replace("values (1,", f"values ({run},"))  # fmt: skip
            conn.execute(text("update results set point = :p where case_id = :c"), {"p": point, "c": case_id})
    engine.dispose()
    assert cli_main(["db", "upgrade", "--db", db_url]) == 0
    df = load(db_url)
    stored = dict(zip(df["case_id"], df["axes"], strict=True))
    assert stored == {"rope-k_back-L64": [], "rope-k_back-L128-lr0.001": [["lr", "0.001"]],
                      "nope-k_back-L64-d_model256": [["d_model", "256"]],
                      "alibi-k_back-L64-layers4-lr0.01": [["layers", "4"], ["lr", "0.01"]],
                      "fire-k_back-L64-layers2-lr1e-05": [["layers", "2"], ["lr", "1e-05"]]}  # fmt: skip
    assert all(str(Point.of_stored(a)) == p for a, p in zip(df["axes"], df["point"], strict=True))
    assert _schema_diffs(db_url) == [HEAD_REVISION, []]
    engine = store.open_db(db_url)
    record = {"encoding": "rope", "task": "k_back", "train_length": 64, "eval_length": 64, "seed": 0}
    at = Point.of(lr="0.01", layers=4)  # not the alphabetical order
    store.add_result(engine, 1, record | {"case_id": f"rope-k_back-L64-{at}", "axes": at.stored(),
                                          "encoding_version": "1", "task_version": "1", "config": {},
                                          "config_hash": "h"})  # fmt: skip
    engine.dispose()
    new = load(db_url).iloc[-1]
    assert new["axes"] == [["lr", "0.01"], ["layers", "4"]] and new["point"] == "lr0.01-layers4"
    with pytest.raises(ValueError, match="is not that of its axes"):  # a point's text alone is refused
        ResultRecord.coerce(record | {"case_id": "x", "point": "lr0.01", "encoding_version": "1",
                                            "task_version": "1", "config": {}, "config_hash": "h"})  # fmt: skip
