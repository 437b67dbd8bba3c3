"""Opening a database safely: corrupt SQLite pages refused, concurrent first opens of a new file, passwords masked."""

import subprocess
import sys
from pathlib import Path

import pytest

from pebench import store
from pebench.errors import DatabaseError
from pebench.store.database import safe_url

ROOT = Path(__file__).resolve().parents[2]
RUN = {"package_version": "0", "torch_version": "t", "python_version": "3", "device": "cpu", "host": "h"}


def test_a_sqlite_file_with_corrupt_pages_is_refused_and_not_written(tmp_path):
    path = tmp_path / "r.db"
    engine = store.open_db(f"sqlite:///{path}")
    run = store.start_run(engine, RUN)
    for i in range(300):  # several pages of rows and index entries
        store.add_result(engine, run, {"case_id": f"c{i}" * 20, "encoding": "rope", "encoding_version": "1",
                                       "task": "k_back", "task_version": "1", "train_length": 64, "eval_length": 64,
                                       "seed": i, "config": {"x": "y" * 200}, "config_hash": f"h{i}"})  # fmt: skip
    engine.dispose()
    data = bytearray(path.read_bytes())
    page = 4096
    for p in range(3, len(data) // page - 1):  # scribble over the middle of the interior pages, keep the header
        data[p * page + 100 : p * page + 400] = b"\xff" * 300
    path.write_bytes(bytes(data))
    before = path.read_bytes()
    with pytest.raises(DatabaseError, match="is not a usable database: .*corrupt"):
        store.open_db(f"sqlite:///{path}")
    assert path.read_bytes() == before


@pytest.mark.slow
def test_concurrent_first_opens_of_a_new_database_all_succeed(tmp_path):
    code = "import sys; from pebench.store.database import open_db; open_db(sys.argv[1]).dispose()"
    for i in range(8):
        url = f"sqlite:///{tmp_path / f'new{i}.db'}"
        procs = [subprocess.Popen([sys.executable, "-c", code, url], stderr=subprocess.PIPE, text=True, cwd=ROOT)
                 for _ in range(2)]  # fmt: skip
        for p in procs:
            _, err = p.communicate(timeout=60)
            assert p.returncode == 0, err


def test_passwords_are_masked_wherever_shown():
    url = "postgresql+psycopg://pebench:s3cret@db.example:5432/results"
    assert safe_url(url) == "postgresql+psycopg://pebench:***@db.example:5432/results"
    command = f"pytest suite --db {url} -k L64"
    assert safe_url(command) == "pytest suite --db postgresql+psycopg://pebench:***@db.example:5432/results -k L64"
    assert safe_url("sqlite:///results.db") == "sqlite:///results.db"
    with pytest.raises(DatabaseError) as err:  # no driver installed or no server: the message has no password
        store.open_db("postgresql+nosuchdriver://pebench:s3cret@localhost:1/results")
    assert "s3cret" not in str(err.value) and "***" in str(err.value)
