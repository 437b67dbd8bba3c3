"""The typed result record against the schema, and the one resolution of the database URL shared by the suite and
every ``pebench`` command."""

import subprocess
import sys
from pathlib import Path

import pytest

from pebench import store
from pebench.records.record import ResultRecord
from pebench.store.database import project_root, resolve_url

ROOT = Path(__file__).resolve().parents[2]
IDENTITY = {"case_id": "rope-k_back-L64", "encoding": "rope", "encoding_version": "1", "task": "k_back",
            "task_version": "1", "train_length": 64, "eval_length": 64, "seed": 0, "config": {}, "config_hash": "h"}


def test_the_record_has_exactly_the_columns_of_the_results_table():
    rec = ResultRecord(**IDENTITY, score=0.5, curve=[{"step": 1, "loss": 2.0, "accuracy": 0.1}])
    assert set(rec.columns()) == set(store.RESULT_FIELDS)
    assert ResultRecord.from_json(rec.to_json()) == rec


def test_an_unknown_field_is_an_error_not_silently_dropped(tmp_path):
    engine = store.open_db(f"sqlite:///{tmp_path / 'r.db'}")
    run = store.start_run(engine, {"package_version": "0", "torch_version": "t", "python_version": "3",
                                   "device": "cpu", "host": "h"})  # fmt: skip
    with pytest.raises(ValueError, match="unknown field.*accuracy_at_2x"):
        store.add_result(engine, run, {**IDENTITY, "accuracy_at_2x": 0.3})
    rid = store.add_result(engine, run, {**IDENTITY, "score": 0.25})
    with store.session_scope(engine) as s:
        assert s.get(store.Result, rid).score == 0.25
    engine.dispose()


def test_db_url_order_given_then_environment_then_project_root(tmp_path, monkeypatch):
    (tmp_path / "proj" / "sub").mkdir(parents=True)
    (tmp_path / "proj" / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    monkeypatch.chdir(tmp_path / "proj" / "sub")
    monkeypatch.delenv("PEBENCH_DB", raising=False)
    assert project_root() == tmp_path / "proj"
    assert resolve_url() == f"sqlite:///{tmp_path / 'proj' / 'results.db'}"
    assert resolve_url(root=tmp_path) == f"sqlite:///{tmp_path / 'results.db'}"  # the suite passes its rootdir
    monkeypatch.setenv("PEBENCH_DB", "sqlite:///from-env.db")
    assert resolve_url() == "sqlite:///from-env.db"
    assert resolve_url("sqlite:///given.db") == "sqlite:///given.db"


@pytest.mark.slow
def test_the_cli_reads_pebench_db_and_the_project_root(tmp_path):
    project = tmp_path / "proj"
    (project / "sub").mkdir(parents=True)
    (project / "pyproject.toml").write_text("")
    engine = store.open_db(f"sqlite:///{project / 'results.db'}")
    engine.dispose()

    def results(env_db: str | None) -> subprocess.CompletedProcess:
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)} | ({"PEBENCH_DB": env_db} if env_db else {})
        return subprocess.run([sys.executable, "-m", "pebench", "results"], cwd=project / "sub", env=env,
                              capture_output=True, text=True, timeout=120)  # fmt: skip

    found = results(None)  # from a subdirectory: the project root's results.db, as the suite would use
    assert found.returncode == 0 and found.stdout.strip() == "no results", found.stderr
    missing = results(f"sqlite:///{tmp_path / 'elsewhere.db'}")
    assert missing.returncode == 2 and "elsewhere.db" in missing.stderr and "no such database file" in missing.stderr
