"""Open checks what it opens (issue 33): a database whose revision says current but whose tables lack what the code
needs -- hand-edited, or written by another tool -- is refused in one line naming the missing pieces and ``pebench db
status``, by every reader and writer, and never written; an upgrade that cannot bring a database to the declared
tables is rolled back. On SQLite and on PostgreSQL."""

from __future__ import annotations

import pytest
from alembic import command
from sqlalchemy import create_engine, inspect, text

from pebench import store
from pebench.cli import main as cli_main
from pebench.errors import DatabaseError
from pebench.store import migrate
from pebench.store.database import check_db, safe_url
from pebench.store.schema import HEAD_REVISION

RUN = {"package_version": "0", "torch_version": "t", "python_version": "3", "device": "cpu", "host": "h"}
RECORD = {"case_id": "rope-k_back-L64", "encoding": "rope", "encoding_version": "1", "task": "k_back",
          "task_version": "1", "train_length": 64, "eval_length": 64, "seed": 0, "config": {}, "config_hash": "h",
          "status": "ok", "score": 0.5, "curve": [{"step": 1, "loss": 2.0, "accuracy": 0.1}]}  # fmt: skip


def _database(url: str, *edits: str) -> None:
    """A pebench database at the head revision with one finished run and one result, then ``edits`` (SQL)."""
    engine = store.open_db(url)
    run = store.start_run(engine, RUN)
    store.add_result(engine, run, RECORD)
    store.finish_run(engine, run, "finished")
    with engine.begin() as conn:
        for sql in edits:
            conn.execute(text(sql))
    engine.dispose()


def _fingerprint(url: str) -> tuple:
    """Every table with its columns and row count, and the stored revision: what a write would change."""
    engine = create_engine(url)
    with engine.connect() as conn:
        insp = inspect(conn)
        tables = sorted(insp.get_table_names())
        shape = {t: (sorted(c["name"] for c in insp.get_columns(t)),
                     conn.execute(text(f"select count(*) from {t}")).scalar_one()) for t in tables}  # fmt: skip
    engine.dispose()
    return tuple(tables), shape


def refusal(url: str, lacks: str) -> str:
    shown = safe_url(url)
    return (f"--db '{shown}' is a pebench database at schema revision {HEAD_REVISION} whose tables lack {lacks} "
            f"(hand-edited, or written by another tool); pebench neither reads nor writes it: restore what it lacks "
            f"or give a new file (pebench db status --db '{shown}' says what it holds)")  # fmt: skip


def test_a_database_lacking_columns_is_refused_in_one_line_by_every_command(db_url, tmp_path, capsys):
    _database(db_url, "alter table results drop column tokens_per_s", "alter table curve_points drop column val_2x")
    before = _fingerprint(db_url)
    expected = refusal(db_url, "results.tokens_per_s, curve_points.val_2x")
    for create in (True, False):
        with pytest.raises(DatabaseError) as err:
            store.open_db(db_url, create=create)
        assert str(err.value) == expected
    with pytest.raises(DatabaseError) as err:
        check_db(db_url)  # the suite's dry run
    assert str(err.value) == expected
    out_db = f"sqlite:///{tmp_path / 'merged.db'}"
    for argv in (["results"], ["report", "-o", str(tmp_path / "p.html")], ["findings"], ["compare", "1", "2"],
                 ["seed-spread"], ["db", "upgrade"], ["merge", db_url, "-o", out_db]):  # fmt: skip
        argv = argv if argv[0] == "merge" else [*argv, "--db", db_url]
        assert cli_main(argv) == 2, argv
        captured = capsys.readouterr()
        assert captured.err == f"pebench: error: {expected}\n" and captured.out == "", argv
    assert cli_main(["db", "status", "--db", db_url]) == 1
    shown = safe_url(db_url)
    status = (f"{shown}: a pebench database at schema revision {HEAD_REVISION} whose tables lack "
              "results.tokens_per_s, curve_points.val_2x\n")  # fmt: skip
    assert capsys.readouterr().out == status
    assert _fingerprint(db_url) == before  # nothing written, nothing lost
    assert not (tmp_path / "p.html").exists() and not (tmp_path / "merged.db").exists()
    assert "s3cret" not in expected


@pytest.mark.parametrize(
    ("edit", "described"),
    [
        ("drop table curve_points", f"a pebench database at schema revision {HEAD_REVISION} whose tables lack table "
                                    "curve_points"),
        ("delete from alembic_version", "a pebench database whose alembic_version table holds no revision"),
    ],
)  # fmt: skip
def test_a_missing_table_or_revision_is_named(db_url, edit, described, capsys):
    _database(db_url, edit)
    before = _fingerprint(db_url)
    shown = safe_url(db_url)
    with pytest.raises(DatabaseError) as err:
        store.open_db(db_url)
    assert str(err.value).startswith(f"--db '{shown}' is {described} (hand-edited, or written by another tool)")
    assert cli_main(["db", "status", "--db", db_url]) == 1
    assert capsys.readouterr().out == f"{shown}: {described}\n"
    assert _fingerprint(db_url) == before


def test_an_upgrade_that_cannot_give_the_declared_tables_is_rolled_back(db_url, capsys):
    """A revision-0002 database that lost a column no later step adds: upgrading it (by a writer or by pebench db
    upgrade) would give an incomplete database, so it is refused and the steps already applied are rolled back."""
    engine = create_engine(db_url)
    with engine.begin() as conn:
        command.upgrade(migrate._alembic_config(conn), "0002")
        conn.execute(text("alter table results drop column tokens_per_s"))
    engine.dispose()
    before = _fingerprint(db_url)
    assert migrate.upgrade_is_safe("0002")  # a writer would upgrade it on its own
    expected = refusal(db_url, "results.tokens_per_s").replace(f"revision {HEAD_REVISION}", "revision 0002")
    with pytest.raises(DatabaseError) as err:
        store.open_db(db_url)
    assert str(err.value) == expected
    assert _fingerprint(db_url) == before  # still without the columns of revisions 0003 and 0004
    assert cli_main(["db", "upgrade", "--db", db_url]) == 2
    assert capsys.readouterr().err == f"pebench: error: {expected}\n"
    assert _fingerprint(db_url) == before
    engine = create_engine(db_url)
    with engine.connect() as conn:
        assert conn.execute(text("select version_num from alembic_version")).scalar_one() == "0002"
    engine.dispose()
