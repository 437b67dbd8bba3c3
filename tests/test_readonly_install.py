"""Read-only where only reading (issue 86): the wheel installed in a fresh virtual environment whose package directory
is then made read-only (``chmod -R a-w``, as a system-wide or container install), every reading command and the
README's ``--with-reference`` run work as an unprivileged user (the ``unprivileged`` fixture: under root, ``setpriv``
dropping CAP_DAC_OVERRIDE), and the package directory is left as it was: no ``reference.db-shm``/``-wal``, no
``__pycache__`` file, no byte or time changed.

What is compared: every path under the installed ``pebench`` directory with its size, modification time and mode,
before the commands and after, and the shipped reference's bytes. pip compiled the installed modules, so Python
imports them without writing; pytest's assertion rewriting of the suite's module
(``pebench/suite/test_positional_encodings.py``) would write its own ``.pyc`` beside it in a writable install, which a
read-only one refuses silently -- the read-only directory is what makes "nothing written" hold, and the comparison
checks that nothing got through. The run trains the default k_back case (2 models, one per rate of the reference's
learning-rate protocol): nothing smaller joins the reference, whose k_back cells are at the default settings (the
join, :func:`pebench.analysis.reference.comparable_key`, takes the training, model and evaluation settings as they
are)."""

from __future__ import annotations

import hashlib
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from plugin_files import my_pe
from test_install import _ok, install

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """The ``bin`` directory of a fresh virtual environment with the wheel installed, and its ``pebench`` package
    directory, made read-only for the module's tests (writable again after them, so the temporary files can go)."""
    bin_dir = install(tmp_path_factory.mktemp("readonly-install"))
    where = _ok([bin_dir / "python", "-c", "import pebench; print(pebench.__file__)"], bin_dir.parent).stdout
    pkg = Path(where.strip()).parent
    assert pkg.is_relative_to(bin_dir.parent) and (pkg / "data" / "reference.db").is_file(), pkg
    paths = [pkg, *pkg.rglob("*")]
    for p in paths:
        p.chmod(stat.S_IMODE(p.stat().st_mode) & ~0o222)
    try:
        yield bin_dir, pkg
    finally:
        for p in paths:
            p.chmod(stat.S_IMODE(p.stat().st_mode) | stat.S_IWUSR)


def listing(root: Path) -> dict[str, tuple[int, int, int]]:
    """Every path under ``root``: (size, modification time in ns, mode)."""
    return {str(p.relative_to(root)): (s.st_size, s.st_mtime_ns, s.st_mode)
            for p in sorted(root.rglob("*")) for s in [p.lstat()]}  # fmt: skip


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_reading_commands_and_a_reference_run_leave_a_read_only_install_untouched(package, unprivileged, tmp_path):
    bin_dir, pkg = package
    ref = pkg / "data" / "reference.db"
    before, digest = listing(pkg), _sha(ref)
    assert not any(p.endswith(("-shm", "-wal", "-journal")) for p in before)

    def ok(*args: str) -> str:
        return _ok([*unprivileged, bin_dir / "pebench", *args], tmp_path).stdout

    url = f"sqlite:///{ref}"
    assert "stick_breaking-" in ok("results", "--db", url, "--run", "all", "--encoding", "stick_breaking")
    assert "stale cell(s) of" in ok("results", "--stale", "--db", url).splitlines()[-1]
    assert ok("report", "--db", url, "--run", "all", "-o", "ref.html").startswith("wrote ref.html")
    assert ok("db", "status", "--db", url).startswith(f"{url}: a pebench database at schema revision")
    assert ok("findings", "--db", url, "--run", "all").startswith("findings for latest result of every case (runs 1, ")
    my_pe(tmp_path)
    out = ok("run", "--plugin", "my_pe.py", "--encoding", "my_pe", "--task", "k_back", "-n", "2", "--with-reference",
             "--report", "mine.html")  # fmt: skip
    assert "6 passed" in out and "leaderboard -> mine.html" in out and "my_pe: OOD score" in out
    again = ok("report", "--db", f"sqlite:///{tmp_path / 'results.db'}", "--with-reference", "-o", "again.html")
    assert again.startswith("wrote again.html") and "my_pe: OOD score" in again
    assert listing(pkg) == before and _sha(ref) == digest
