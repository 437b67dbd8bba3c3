"""What each ``pebench`` command leaves on disk (issue 33): its database file unchanged and nothing beside it (every
engine disposed, so no ``-wal`` or ``-shm``), its output where asked and nowhere else, on success and on error alike;
an error is one line. Each command runs through ``pebench.cli.main`` in this process, which makes the check of the
engines stricter than a process of its own would: an engine left open keeps its ``-wal`` file while the process
lives, where a process's exit would have removed it (the ``pebench`` command itself starts as a process in
tests/cli/test_cli.py)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from pebench import store
from pebench.report import synthetic

UNKNOWN_RUN = "pebench: error: unknown run id 99; existing runs: 1, 2"


def listing(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(root.rglob("*"))}  # fmt: skip


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two finished runs of two encodings on k_back, two lengths, two seeds (synthetic scores), in a directory of
    its own."""
    path = tmp_path_factory.mktemp("db") / "r.db"
    spec = synthetic.SynthSpec(["rope", "alibi"], [synthetic.SynthTask("k_back", 64, (64, 128), chance=0.02, vocab=52)],
                               seeds=2, curve_points=3, attention=False)  # fmt: skip
    engine = store.open_db(f"sqlite:///{path}")
    synthetic.write_run(engine, synthetic.records(spec, 0.0, 1))
    synthetic.write_run(engine, synthetic.records(spec, 0.02, 2))
    engine.dispose()
    return path


@pytest.mark.parametrize(
    ("argv", "returncode", "error", "writes"),
    [
        (["results", "--db", "{db}"], 0, None, []),
        (["report", "--db", "{db}", "-o", "{out}/p.html"], 0, None, ["p.html"]),
        (["findings", "--db", "{db}"], 0, None, []),
        (["compare", "1", "2", "--db", "{db}", "--speed-tolerance", "100"], 0, None, []),
        (["seed-spread", "--db", "{db}", "-o", "{out}/s.json"], 0, None, ["s.json"]),
        (["db", "status", "--db", "{db}"], 0, None, []),
        (["db", "upgrade", "--db", "{db}"], 0, None, []),
        (["merge", "{path}::2", "-o", "{out}/m.db"], 0, None, ["m.db"]),
        (["list", "tasks"], 0, None, []),
        (["--help"], 0, None, []),
        (["results", "--db", "{db}", "--run", "99"], 2, UNKNOWN_RUN, []),
        (["report", "--db", "{db}", "--run", "99", "-o", "{out}/p.html"], 2, UNKNOWN_RUN, []),
        (["findings", "--db", "{db}", "--run", "99"], 2, UNKNOWN_RUN, []),
        (["compare", "1", "99", "--db", "{db}"], 2, UNKNOWN_RUN, []),
        (["seed-spread", "--db", "{db}", "--run", "99", "-o", "{out}/s.json"], 2, UNKNOWN_RUN, []),
        (["merge", "{path}::99", "-o", "{out}/m.db"], 2, UNKNOWN_RUN, []),
        (["db", "status", "--db", "{db}x"], 2, "pebench: error: --db '{db}x': no such database file", []),
        (["results", "--db", "{db}", "--bogus"], 2, "pebench: error: unrecognized arguments: --bogus (see: pebench "
                                                    "--help)", []),
        (["db", "--db", "{db}"], 2, "pebench db: error: the following arguments are required: action (see: pebench "
                                    "db --help)", []),
    ],
)  # fmt: skip
def test_a_command_leaves_only_its_database_and_its_output(database, tmp_path, monkeypatch, pebench_cli, argv,
                                                           returncode, error, writes):  # fmt: skip
    db_dir, out, cwd = database.parent, tmp_path / "out", tmp_path / "cwd"
    out.mkdir()
    cwd.mkdir()
    before = listing(db_dir)
    assert before.keys() == {"r.db"}
    fill = {"db": f"sqlite:///{database}", "path": str(database), "out": str(out)}
    argv = [a.format(**fill) for a in argv]
    monkeypatch.chdir(cwd)
    proc = pebench_cli(*argv)
    assert proc.returncode == returncode, proc.stdout + proc.stderr
    if error is not None:
        assert proc.stderr.splitlines() == [error.format(**fill)]
    assert listing(db_dir) == before  # the database unchanged, nothing beside it
    assert sorted(listing(out)) == writes and listing(cwd) == {}  # merge's new m.db: no -wal, no -shm either


def test_results_lists_the_latest_run_by_default_and_filters_by_encoding_and_task(database, capsys):
    from pebench.cli import main

    url = f"sqlite:///{database}"
    assert main(["results", "--db", url]) == 0
    latest = capsys.readouterr().out
    rows = [line.split() for line in latest.splitlines() if "-k_back-" in line]
    assert rows and {r[0] for r in rows} == {"2"}  # the latest run only, as report and findings show
    assert main(["results", "--db", url, "--run", "all", "--encoding", "alibi", "--task", "k_back"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines() if "-k_back-" in line]
    assert {r[0] for r in rows} == {"1", "2"} and all(r[1].startswith("alibi-") for r in rows)
    assert main(["results", "--db", url, "--encoding", "alibi,bogus"]) == 2
    err = capsys.readouterr().err
    assert "--encoding bogus: no results in run latest of this database (it has: alibi, rope)" in err
