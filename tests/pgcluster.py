"""A throwaway PostgreSQL cluster for the tests: ``initdb`` in a temporary directory, ``pg_ctl start`` on a free
local port with password authentication, one fresh database per test, stopped and removed at the end.

Locally, a machine without PostgreSQL's server binaries or the ``psycopg`` driver skips the PostgreSQL half of the
tests; under CI (``$CI`` or ``$PEBENCH_REQUIRE_POSTGRES`` set, as ``.ci/run`` does) that is a failure, so the
shared-database mode is always tested there.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest

USER = "pebench"
PASSWORD = "s3cret-pw"  # the tests check that it never appears in output or in the database


def _binaries() -> Path | None:
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(candidates[-1]).parent if candidates else None


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") or os.environ.get("PEBENCH_REQUIRE_POSTGRES"):
        pytest.fail(f"PostgreSQL tests cannot run under CI: {reason}")
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


PREFIX = "pebench-pg-"


def _stop_orphans(cluster: Cluster) -> None:
    """Stop and remove the clusters of test sessions that were killed before they could stop theirs."""
    for d in Path(tempfile.gettempdir()).glob(f"{PREFIX}*-*"):
        pid = d.name.removeprefix(PREFIX).split("-")[0]
        if not pid.isdigit() or _alive(int(pid)):
            continue
        subprocess.run([*cluster.as_user, str(cluster.bindir / "pg_ctl"), "-D", str(d / "data"), "-m", "immediate",
                        "stop"], capture_output=True, timeout=60)  # fmt: skip
        shutil.rmtree(d, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Cluster:
    """One running server; :meth:`new_database` gives a URL of an empty database of its own."""

    def __init__(self) -> None:
        bindir = _binaries()
        if bindir is None:
            _unavailable("PostgreSQL server binaries (initdb, pg_ctl) not found; install Debian's postgresql")
        try:
            import psycopg  # noqa: F401
        except ImportError:
            _unavailable("the psycopg driver is not installed; pip install -e '.[postgres]'")
        self.bindir = bindir
        self.as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        _stop_orphans(self)
        self.dir = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-"))
        self.data = self.dir / "data"
        self.port = _free_port()
        if self.as_user:  # initdb refuses to run as root: run the server as the postgres system user
            shutil.chown(self.dir, "postgres")
        pwfile = self.dir / "pw"
        pwfile.write_text(PASSWORD + "\n")
        if self.as_user:
            shutil.chown(pwfile, "postgres")
        self._run("initdb", "-D", str(self.data), "-U", USER, "--pwfile", str(pwfile), "-A", "scram-sha-256",
                  "-E", "UTF8", "--locale=C", "--no-sync")  # fmt: skip
        opts = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off"
        self._run("pg_ctl", "-D", str(self.data), "-o", opts, "-l", str(self.dir / "log"), "-w", "start")
        self.base = f"postgresql+psycopg://{USER}:{PASSWORD}@127.0.0.1:{self.port}"

    def _run(self, tool: str, *args: str) -> None:
        proc = subprocess.run([*self.as_user, str(self.bindir / tool), *args], capture_output=True, text=True,
                              cwd=self.dir, timeout=120)  # fmt: skip
        if proc.returncode != 0:
            raise RuntimeError(f"{tool} failed: {proc.stdout}{proc.stderr}")

    def new_database(self) -> str:
        import psycopg

        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(host="127.0.0.1", port=self.port, user=USER, password=PASSWORD, dbname="postgres",
                             autocommit=True) as conn:  # fmt: skip
            conn.execute(f'CREATE DATABASE "{name}"')
        return f"{self.base}/{name}"

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "stop")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)
