"""The preflight battery (issue 70): every error a run can know before training is one line, exit status 4 for the suite
(2 for a ``pebench`` command), before any model is trained and with nothing written -- a read-only database file
(SQLite) or database (PostgreSQL), an unwritable ``--cache-dir``, ``--report`` into a read-only directory, a
``--with-reference`` that cannot be joined with the run, a plugin hook of the wrong shape, a plugin name that is no
identifier, a bad value of a flag with choices or a type, ``--lr-sweep`` rates, ``--benchmark-json`` into a read-only
directory; and ``pebench new --dir`` and ``pebench report -o`` / ``--png`` into a read-only directory. A second
writer holding a PostgreSQL transaction open does not stop the preflight.

The read-only cases run the child process under :func:`conftest.unprivileged`: as is for a user that is not root; as
root, with ``CAP_DAC_OVERRIDE`` dropped (``setpriv``), so that the file permissions bite as they do for a user. They
are skipped, saying why, only where neither works."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from plugin_files import WRONG_SHAPE, write
from sqlalchemy import create_engine, text
from sqlalchemy.orm import Session

from pebench import store
from pebench.errors import InvalidNameError
from pebench.results import load
from pebench.store.database import safe_url
from pebench.store.schema import Fingerprint, Run

ROOT = Path(__file__).resolve().parents[2]
CASE = ("--encoding", "rope", "--task", "k_back", "-k", "L64", "--steps", "2")


def read_only_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o555)
    return path


def _database(path: Path) -> str:
    url = f"sqlite:///{path}"
    store.open_db(url).dispose()
    return url


def _refused(proc, line: str) -> None:
    """One line on stderr, exit status 4, no case run."""
    assert proc.returncode == 4, proc.output
    assert proc.stderr.strip().splitlines() == [f"ERROR: {line}"], proc.stderr
    assert "passed" not in proc.stdout and "Traceback" not in proc.output


def test_a_read_only_database_file_is_refused_before_training(run_suite, tiny, tmp_path, unprivileged):
    path = tmp_path / "db" / "r.db"
    path.parent.mkdir()
    url = _database(path)
    path.chmod(0o444)
    before = path.read_bytes()
    proc = run_suite(*CASE, *tiny, "--db", url, "--cache-dir", str(tmp_path / "c"), prefix=unprivileged)
    _refused(proc, f"--db '{url}' cannot be written: Permission denied (file {path}); give a database you can write "
                   "to")  # fmt: skip
    assert not (tmp_path / "c").exists() and path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["r.db"]


def test_a_database_file_in_a_read_only_directory_is_refused(run_suite, tiny, tmp_path, unprivileged):
    ro = read_only_dir(tmp_path / "ro")
    proc = run_suite(*CASE, *tiny, "--db", f"sqlite:///{ro / 'r.db'}", "--no-cache", prefix=unprivileged)
    _refused(proc, f"--db 'sqlite:///{ro / 'r.db'}': its directory '{ro}' cannot be written: Permission denied; give a "
                   "directory you can write to")  # fmt: skip
    assert not any(ro.iterdir())


def test_an_unwritable_cache_dir_is_refused_before_training(run_suite, tiny, tmp_path, unprivileged):
    ro = read_only_dir(tmp_path / "ro")
    url = f"sqlite:///{tmp_path / 'r.db'}"
    proc = run_suite(*CASE, *tiny, "--db", url, "--cache-dir", str(ro / "cache"), prefix=unprivileged)
    _refused(proc, f"--cache-dir '{ro / 'cache'}' cannot be written: Permission denied (it would be created in {ro}); "
                   "give a directory you can write to")  # fmt: skip
    assert not (tmp_path / "r.db").exists() and not any(ro.iterdir())


def test_a_report_into_a_read_only_directory_is_refused_before_training(run_suite, tiny, tmp_path, unprivileged):
    ro = read_only_dir(tmp_path / "ro")
    url = f"sqlite:///{tmp_path / 'r.db'}"
    proc = run_suite(*CASE, *tiny, "--db", url, "--no-cache", "--report", str(ro / "p.html"), prefix=unprivileged)
    _refused(proc, f"--report '{ro / 'p.html'}' cannot be written: Permission denied (in {ro}); give a path you can "
                   "write to")  # fmt: skip
    assert not (tmp_path / "r.db").exists()


def test_benchmark_json_into_a_read_only_directory_is_one_line(tiny, tmp_path, unprivileged):
    """pytest-benchmark 5.3 on (pebench requires it) writes the file at the end; the preflight refuses the path before
    training, under ``pebench run`` and under plain ``pytest suite`` alike. (5.2 and older opened it while pytest
    parsed the command line: under plain pytest, pytest's four-line usage block.)"""
    ro = read_only_dir(tmp_path / "ro")
    out = ro / "b.json"
    args = [*CASE, *tiny, "--no-cache", "--db", f"sqlite:///{tmp_path / 'r.db'}", "--benchmark-json", str(out)]
    env = {k: v for k, v in os.environ.items() if k != "PEBENCH_DB" and not k.startswith("PYTEST_XDIST_")}
    for command in (["-m", "pebench", "run"], ["-m", "pytest", str(ROOT / "suite"), "-p", "no:cacheprovider"]):
        proc = subprocess.run([*unprivileged, sys.executable, *command, *args], cwd=tmp_path, capture_output=True,
                              text=True, env=env, timeout=300)  # fmt: skip
        assert proc.returncode == 4, proc.stdout + proc.stderr
        (line,) = proc.stderr.strip().splitlines()
        assert line == (f"ERROR: --benchmark-json '{ro / 'b.json'}' cannot be written: Permission denied (in {ro}); "
                        "give a path you can write to"), line  # fmt: skip
        assert "passed" not in proc.stdout  # nothing trained
    assert not any(ro.iterdir())


def test_a_reference_of_another_protocol_is_refused_before_training(run_suite, tiny, tmp_path, lr_run):
    """``lr_run`` holds runs of the default protocol; a one-rate run can be joined with none of its cells."""
    proc = run_suite("--encoding", "alibi", *CASE[2:], *tiny, "--db", f"sqlite:///{tmp_path / 'r.db'}", "--no-cache",
                     "--report", str(tmp_path / "p.html"), "--with-reference", lr_run, "--allow-stale")  # fmt: skip
    other = ("protocol differs (the best of the learning rates 0.001,0.003 per cell in the reference, one learning "
             "rate here)")
    _refused(proc, f"--with-reference {lr_run}: none of its results is comparable with this run (learned on k_back: "
                   f"{other}; rope on k_back: {other}); train the run at the reference's settings, or give a reference "
                   "built at this pebench's task versions and the run's settings")  # fmt: skip
    assert not (tmp_path / "r.db").exists() and not (tmp_path / "p.html").exists()


def test_a_plugin_hook_of_the_wrong_shape_is_one_line_naming_file_hook_and_shape(run_suite, tiny, tmp_path):
    plugin = write(tmp_path, "wrong.py", WRONG_SHAPE)
    proc = run_suite("--plugin", "wrong.py", "--encoding", "wrong_shape", *CASE[2:], *tiny, "--no-cache",
                     "--db", f"sqlite:///{tmp_path / 'r.db'}")  # fmt: skip
    _refused(proc, f"plugin {plugin}: encoding wrong_shape: attn_bias returned (2, 64, 65) torch.float32; expected "
                   "None, (H, T, T) = (2, 64, 64) or (B, H, T, T) = (2, 2, 64, 64) (or broadcastable to it), a "
                   "floating dtype")  # fmt: skip
    assert not (tmp_path / "r.db").exists()


def test_a_plugin_name_that_is_no_identifier_is_refused(run_suite, tmp_path):
    """A name with ``/`` and ``<`` would make folders in the cache and markup on the page: the rule of pebench new."""
    plugin = write(tmp_path, "xss.py", WRONG_SHAPE.replace('name = "wrong_shape"',
                                                           'name = "<script>alert(1)</script>"'))  # fmt: skip
    proc = run_suite("--plugin", "xss.py", "--db", f"sqlite:///{tmp_path / 'r.db'}")
    _refused(proc, f"encoding '<script>alert(1)</script>' from plugin {plugin}: its name must be a lower-case Python "
                   "identifier (letters, digits and _, not starting with a digit, not a keyword), e.g. my_pe; rename "
                   "it (its name attribute)")  # fmt: skip


def test_the_name_rule_of_pebench_new_holds_for_every_encoding_and_task():
    from pebench.encodings.registry import ENCODINGS
    from pebench.registry import valid_name
    from pebench.tasks.k_back import KBack
    from pebench.tasks.registry import TASKS

    assert all(valid_name(n) for n in [*ENCODINGS.names(), *TASKS.names()])
    with TASKS.isolated(), pytest.raises(InvalidNameError, match=r"^task 'k-back/2' from module tests?\.?"):
        TASKS.add("k-back/2", type("Renamed", (KBack,), {"name": "k-back/2", "__module__": "tests"}))


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--stop", "nosuch"], "--stop 'nosuch' is not valid; valid: budget, learned, plateau"),
        (["--scale", "huge"], "--scale 'huge' is not valid; valid: tiny, small, base"),
        (["--precision", "fp8"], "--precision 'fp8' is not valid; valid: fp32, bf16, tf32, auto"),
        (["--pack", "maybe"], "--pack 'maybe' is not valid; valid: auto, on, off"),
        (["--steps", "abc"], "--steps 'abc' is not an integer"),
        (["--tolerance", "lots"], "--tolerance 'lots' is not a number"),
        (["--lr-sweep", "0,1e-3"], "--lr-sweep '0,1e-3': '0' is not a positive finite learning rate; give rates such "
                                   "as 0.001,0.003 (V1,V2,...), nothing for the default grid, or off for one rate "
                                   "(--lr)"),
        (["--lr-sweep", "abc"], "--lr-sweep 'abc': 'abc' is not a positive finite learning rate; give rates such as "
                                "0.001,0.003 (V1,V2,...), nothing for the default grid, or off for one rate (--lr)"),
        (["--lr-sweep", "1e-3,0.001"], "--lr-sweep '1e-3,0.001': '0.001' is given twice; give rates such as "
                                       "0.001,0.003 (V1,V2,...), nothing for the default grid, or off for one rate "
                                       "(--lr)"),
    ],
)  # fmt: skip
def test_a_bad_value_is_one_line_naming_the_flag_and_the_choices(run_suite, tmp_path, args, line):
    proc = run_suite(*CASE, "--db", f"sqlite:///{tmp_path / 'r.db'}", *args, inprocess=True)
    assert proc.returncode == 4, proc.output
    assert [x for x in proc.stderr.strip().splitlines() if x.strip()] == [f"ERROR: {line}"], proc.stderr
    assert "usage:" not in proc.output and not (tmp_path / "r.db").exists()


def test_postgresql_a_read_only_database_is_refused_before_training(run_suite, tiny, tmp_path, postgres):
    url = postgres.new_database()
    store.open_db(url).dispose()
    name = url.rsplit("/", 1)[1]
    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on'))
    engine.dispose()
    proc = run_suite(*CASE, *tiny, "--db", url, "--cache-dir", str(tmp_path / "c"))
    _refused(proc, f"--db '{safe_url(url)}' cannot be written: cannot execute INSERT in a read-only transaction; "
                   "give a database you can write to")  # fmt: skip
    assert not (tmp_path / "c").exists()


def test_postgresql_a_second_writer_does_not_stop_the_preflight(run_suite, tiny, tmp_path, postgres):
    """Another session holds an open transaction that wrote a run row and a fingerprint: the preflight's own write
    (rolled back) neither waits for it nor fails, and the run stores its result beside it."""
    url = postgres.new_database()
    store.open_db(url).dispose()
    other = create_engine(url)
    with Session(other) as session:  # rows written, the transaction left open
        session.add(Run(package_version="0", torch_version="t", python_version="3", device="cpu", host="other"))
        session.add(Fingerprint(digest="other", kind="encoding", name="rope"))
        session.flush()
        proc = run_suite(*CASE, *tiny, "--db", url, "--no-cache")
        session.rollback()
    other.dispose()
    assert proc.returncode == 0, proc.output
    assert load(url)["encoding"].tolist() == ["rope"]


def _pebench(args: list[str], cwd: Path, prefix: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*prefix, sys.executable, "-m", "pebench", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)  # fmt: skip


def test_pebench_new_into_a_read_only_directory_is_one_line(tmp_path, unprivileged):
    ro = read_only_dir(tmp_path / "ro")
    for where, extra in ((ro, ""), (ro / "sub", f" (it would be created in {ro})")):
        proc = _pebench(["new", "task", "my_task", "--dir", str(where)], tmp_path, unprivileged)
        assert proc.returncode == 2 and proc.stdout == "", proc.stderr
        assert proc.stderr.splitlines() == [f"pebench: error: --dir '{where}' cannot be written: Permission denied"
                                            f"{extra}; give a directory you can write to"]  # fmt: skip
    assert not any(ro.iterdir())


def test_pebench_report_into_a_read_only_directory_is_one_line(tmp_path, unprivileged, lr_run):
    ro = read_only_dir(tmp_path / "ro")
    for args, flag, path in ((["-o", str(ro / "p.html")], "-o", ro / "p.html"),
                             (["-o", str(tmp_path / "p.html"), "--png", str(ro / "p.png")], "--png", ro / "p.png")):
        proc = _pebench(["report", "--db", lr_run, *args], tmp_path, unprivileged)
        assert proc.returncode == 2 and proc.stdout == "", proc.stderr
        assert proc.stderr.splitlines() == [f"pebench: error: {flag} '{path}' cannot be written: Permission denied "
                                            f"(in {ro}); give a path you can write to"]  # fmt: skip
    assert not any(ro.iterdir()) and not (tmp_path / "p.html").exists()
