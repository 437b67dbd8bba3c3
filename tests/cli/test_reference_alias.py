"""``--db reference`` names the shipped reference for the commands that only read it (the README's commands work
from a clone and from a wheel alike); a command that would write it is refused in one line."""

from __future__ import annotations

import pytest

from pebench.errors import PebenchError
from pebench.store.database import REFERENCE_FILE, resolve_url


def test_reference_is_the_shipped_file_for_reading_and_refused_for_writing():
    assert resolve_url("reference") == f"sqlite:///{REFERENCE_FILE}" and REFERENCE_FILE.is_file()
    with pytest.raises(PebenchError, match="--db reference is the shipped reference, which this command would write"):
        resolve_url("reference", write=True)
    assert resolve_url("sqlite:///x.db", write=True) == "sqlite:///x.db"


def test_reading_commands_take_it_and_writing_ones_refuse_it(pebench_cli, run_suite, tmp_path):
    status = pebench_cli("db", "status", "--db", "reference")
    assert status.returncode == 0 and status.stdout.startswith(f"sqlite:///{REFERENCE_FILE}: a pebench database")
    upgrade = pebench_cli("db", "upgrade", "--db", "reference")
    assert upgrade.returncode == 2 and "--db reference is the shipped reference" in upgrade.stderr
    assert "Traceback" not in upgrade.stderr
    run = run_suite("--encoding", "alibi", "--task", "k_back", "--db", "reference", "--collect-only")
    assert run.returncode != 0 and "--db reference is the shipped reference" in run.output
    assert "Traceback" not in run.output
