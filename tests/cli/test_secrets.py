"""No secret printed, anywhere: a password planted in a database URL never appears in what a ``pebench`` command prints
(stdout, stderr) or writes (its output files, the database it writes to), on success and on error. Every place that
shows a URL hides the password with one function, :func:`pebench.store.database.safe_url`.

Every command that takes a URL runs here (:func:`test_every_command_that_takes_a_url_is_covered` keeps the list
whole): against a server that does not exist (every error path), and against a real database on the throwaway
PostgreSQL server (``tests/pgcluster.py``) that a role with the planted password owns, so the success lines -- ``pebench
merge``'s included -- and its refusals ("already merged", "already a merged run") are printed for real."""

from __future__ import annotations

from pathlib import Path

import pytest

from pebench import store
from pebench.cli import build_parser, main
from pebench.report import synthetic
from pebench.store.database import safe_url

PLANTED = "S3cretPlanted"
NOWHERE = f"postgresql+psycopg://pebench:{PLANTED}@127.0.0.1:1/none"
"""A server that does not exist: each command's error path."""
NO_DRIVER = f"postgresql://pebench:{PLANTED}@127.0.0.1:1/none"
"""SQLAlchemy's default PostgreSQL driver (psycopg2, not a dependency): cannot be opened, or no server."""
URL_COMMANDS = {"run", "results", "report", "findings", "compare", "merge", "db", "seed-spread", "rebuild",
                "guard", "table"}
"""The commands that take a database URL: ``--db``, ``--with-reference``, merge's parts and -o (the learning-rate
study's script, which reads databases too, has its own case in tests/studies/test_lr_verdicts.py)."""


def test_safe_url_hides_every_password_and_leaves_the_rest():
    assert safe_url(NOWHERE) == "postgresql+psycopg://pebench:***@127.0.0.1:1/none"
    assert safe_url(f"pebench merge {NO_DRIVER}::4 a.db -o {NOWHERE}") == (
        "pebench merge postgresql://pebench:***@127.0.0.1:1/none::4 a.db -o "
        "postgresql+psycopg://pebench:***@127.0.0.1:1/none")  # fmt: skip
    assert safe_url(f"--db '{NOWHERE}' is not") == "--db 'postgresql+psycopg://pebench:***@127.0.0.1:1/none' is not"
    assert safe_url("postgresql://user@server:pw@host/db") == "postgresql://user@server:***@host/db"  # as SQLAlchemy
    assert safe_url("postgresql://:pw@host/db") == "postgresql://:***@host/db"
    assert safe_url("postgresql://host/db?sslmode=require&password=pw") == (
        "postgresql://host/db?sslmode=require&password=***")
    assert safe_url("host=h password=pw dbname=d") == "host=h password=*** dbname=d"
    for kept in ("sqlite:///results.db", "sqlite:////tmp/a:b/results.db", "postgresql://u@host:5432/db",
                 "postgresql://host:5432/db", "results.db::3", "no URL here"):  # fmt: skip
        assert safe_url(kept) == kept


def test_every_command_that_takes_a_url_is_covered():
    """A new command with a database argument (its help names a database or a URL) joins :data:`URL_COMMANDS`."""
    sub = next(a for a in build_parser()._actions if a.choices and "results" in a.choices)
    takes = {"run"}  # every argument goes to pytest: the suite's --db and --with-reference
    for name, parser in sub.choices.items():
        helps = " ".join(f"{a.help} {a.metavar}" for a in parser._actions)
        if "database" in helps or "URL" in helps:
            takes.add(name)
    assert takes == URL_COMMANDS


@pytest.fixture(scope="module")
def sqlite_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two finished runs of two encodings on k_back, two lengths, two seeds (synthetic scores)."""
    path = tmp_path_factory.mktemp("db") / "r.db"
    engine = store.open_db(f"sqlite:///{path}")
    for offset, seed in ((0.0, 1), (0.02, 2)):
        synthetic.write_run(engine, synthetic.records(_spec(), offset, seed))
    engine.dispose()
    return path


def _spec() -> synthetic.SynthSpec:
    return synthetic.SynthSpec(["rope", "alibi"], [synthetic.SynthTask("k_back", 64, (64, 128), chance=0.02,
                                                                       vocab=52)],
                               seeds=2, curve_points=3, attention=False)  # fmt: skip


def _written(out: Path) -> str:
    """Every file under ``out``, as text (bytes decoded leniently: a SQLite file's strings stay readable)."""
    return "".join(p.read_bytes().decode("utf-8", "replace") for p in sorted(out.rglob("*")) if p.is_file())


def _run(capfd: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str]:
    """``pebench ARGV`` in this process: its exit status and everything it printed (stdout and stderr)."""
    try:
        code = main(argv)
    except SystemExit as exit:  # argparse's errors
        code = int(exit.code or 0)
    out, err = capfd.readouterr()
    return code, out + err


ERROR_ARGVS = [
    ["results", "--db", "{url}"],
    ["results", "--db", "{url}", "--stale"],
    ["report", "--db", "{url}", "-o", "{out}/p.html"],
    ["report", "--db", "{sqlite}", "--with-reference", "{url}", "-o", "{out}/p.html"],
    ["findings", "--db", "{url}"],
    ["findings", "--db", "{url}", "--json"],
    ["compare", "1", "2", "--db", "{url}"],
    ["seed-spread", "--db", "{url}", "-o", "{out}/s.json"],
    ["db", "status", "--db", "{url}"],
    ["db", "upgrade", "--db", "{url}"],
    ["merge", "{url}", "-o", "{out}/m.db"],
    ["merge", "{url}::1", "-o", "{out}/m.db"],
    ["merge", "{path}::1", "-o", "{url}"],
    ["rebuild", "--db", "{url}", "--dry-run"],
    ["rebuild", "--db", "{url}", "--merge"],
    ["guard", "--reference", "{url}", "--dry-run"],
    ["guard", "--reference", "{url}", "--cells", "rope:sort"],
    ["table", "--db", "{url}"],
    ["table", "--db", "{url}", "--format", "csv", "--task", "k_back"],
    ["results", "--bogus", "{url}"],  # argparse's own error names the URL
]


@pytest.mark.parametrize("url", [NOWHERE, NO_DRIVER], ids=["no-server", "no-driver"])
@pytest.mark.parametrize("argv", ERROR_ARGVS, ids=[" ".join(a) for a in ERROR_ARGVS])
def test_an_error_shows_the_url_without_its_password(sqlite_db, tmp_path, capfd, monkeypatch, argv, url):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    argv = [a.format(url=url, out=out, sqlite=f"sqlite:///{sqlite_db}", path=sqlite_db) for a in argv]
    code, printed = _run(capfd, argv)
    assert code == 2, printed
    assert PLANTED not in printed and "pebench:***@127.0.0.1:1/none" in printed, printed
    assert len(printed.strip().splitlines()) == 1, printed  # one line, no traceback
    assert PLANTED not in _written(tmp_path)


def test_the_default_database_from_the_environment_is_masked_too(tmp_path, capfd, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PEBENCH_DB", NOWHERE)
    for argv in (["results"], ["db", "status"], ["findings"], ["seed-spread"], ["compare", "1", "2"],
                 ["rebuild", "--dry-run"], ["table"]):
        code, printed = _run(capfd, argv)
        assert code == 2 and PLANTED not in printed and "***" in printed, printed


@pytest.fixture
def planted(postgres) -> str:
    """A new database on the throwaway PostgreSQL server owned by a role whose password is :data:`PLANTED`: its URL."""
    import psycopg
    from pgcluster import PASSWORD, USER

    name = postgres.new_database().rsplit("/", 1)[1]
    with psycopg.connect(host="127.0.0.1", port=postgres.port, user=USER, password=PASSWORD, dbname="postgres",
                         autocommit=True) as conn:  # fmt: skip
        conn.execute("DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'planted') THEN "
                     f"CREATE ROLE planted LOGIN PASSWORD '{PLANTED}'; END IF; END $$")  # fmt: skip
        conn.execute(f'ALTER DATABASE "{name}" OWNER TO planted')
    return f"postgresql+psycopg://planted:{PLANTED}@127.0.0.1:{postgres.port}/{name}"


def test_every_command_on_a_real_database_shows_no_password(planted, sqlite_db, tmp_path, capfd, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    shown = safe_url(planted)
    assert PLANTED not in shown and shown.startswith("postgresql+psycopg://planted:***@127.0.0.1:")
    printed: dict[str, str] = {}

    def run(*argv: str, codes: tuple[int, ...] = (0,)) -> str:
        code, text = _run(capfd, list(argv))
        assert code in codes, text
        printed[" ".join(argv)] = text
        return text

    # merge into the password-bearing database: the success line, then the refusal to merge the same part twice
    line = run("merge", f"{sqlite_db}::1", "-o", planted)
    assert line.startswith("merged 1 part(s) (shards -) into run 1 of ") and f"of {shown}: 8 results" in line, line
    line = run("merge", f"{sqlite_db}::1", "-o", planted, codes=(2,))
    assert "is already merged into run 1 of the output" in line, line
    run("merge", f"{sqlite_db}::2", "-o", planted)
    engine = store.open_db(planted)  # a run of its own (not merged), to be a part below
    synthetic.write_run(engine, synthetic.records(_spec(), 0.01, 3))
    engine.dispose()
    # the database as a part: merged into a SQLite file (whose provenance names the part), and refused when merged
    run("merge", f"{planted}::3", "-o", str(out / "m.db"))
    line = run("merge", f"{planted}::3", "-o", str(out / "m.db"), codes=(2,))
    assert line.startswith(f"pebench: error: part {shown}::3 (run 3 of ") and "is already merged into run" in line, line
    line = run("merge", f"{planted}::1", "-o", str(out / "m2.db"), codes=(2,))
    assert f"part {shown}::1 is already a merged run" in line, line
    # every reading command
    run("results", "--db", planted)
    run("results", "--db", planted, "--stale")
    assert run("rebuild", "--db", planted, "--dry-run").startswith(f"{shown}: ")
    assert f"of {shown}:" in run("findings", "--db", planted)
    assert shown in run("findings", "--db", planted, "--json")
    run("compare", "1", "2", "--db", planted, codes=(0, 1))
    run("compare", "1", "2", "--db", planted, "--json", codes=(0, 1))
    run("seed-spread", "--db", planted, "--run", "2", "-o", str(out / "s.json"))
    assert run("db", "status", "--db", planted).startswith(f"{shown}: ")
    assert run("db", "upgrade", "--db", planted).startswith(f"{shown}: ")
    run("report", "--db", planted, "-o", str(out / "p.html"))
    run("report", "--db", f"sqlite:///{sqlite_db}", "--with-reference", planted, "--allow-stale",
        "-o", str(out / "r.html"), codes=(0, 2))  # fmt: skip
    monkeypatch.setenv("PEBENCH_DB", planted)
    run("results")
    leaked = [argv for argv, text in printed.items() if PLANTED in text]
    assert not leaked, leaked
    assert {p.name for p in out.iterdir()} >= {"m.db", "p.html", "s.json"}
    assert PLANTED not in _written(out)  # the merged file's provenance, the pages, the JSON
    engine = store.open_db(planted, create=False)
    try:
        with engine.connect() as conn:
            stored = repr(conn.exec_driver_sql("SELECT * FROM runs").fetchall())
    finally:
        engine.dispose()
    assert "pebench merge" in stored and PLANTED not in stored  # the merged runs' commands and provenance


def test_the_suite_shows_no_password(planted, postgres, run_suite, tiny, tmp_path):
    """A suite run into the database (its closing lines name it, its stored command has the URL), and the suite's
    refusals of a database that does not exist and of a reference database that holds no pebench results."""
    empty = planted.rsplit("/", 1)[0] + "/" + postgres.new_database().rsplit("/", 1)[1]  # not the role's: still empty
    runs = {
        "write": ["--encoding", "rope", "--task", "k_back", "-k", "L64", "--steps", "2", "--no-cache", *tiny,
                  "--db", planted],  # fmt: skip
        "no server": ["--collect-only", "--db", NOWHERE],
        "reference": ["--collect-only", "--db", f"sqlite:///{tmp_path / 'r.db'}", "--report", str(tmp_path / "p.html"),
                      "--allow-stale", "--with-reference", empty],  # fmt: skip
    }
    for what, args in runs.items():
        done = run_suite(*args, inprocess=True)
        assert PLANTED not in done.output, (what, done.output)
        assert (done.returncode == 0) == (what == "write"), (what, done.output)
        assert safe_url(args[-1]) in done.output, (what, done.output)
    engine = store.open_db(planted, create=False)
    try:
        with engine.connect() as conn:
            rows = conn.exec_driver_sql("SELECT command, options FROM runs").fetchall()
    finally:
        engine.dispose()
    assert len(rows) == 1 and PLANTED not in repr(rows)  # (in this process the command is this pytest's)
