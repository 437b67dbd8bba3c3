"""``pebench new encoding|task NAME`` (issue 29, item 4): the starting file and its test pass as written (the test file
under pytest, the plugin under ``pebench check`` and in a tiny suite run with ``--plugin``); every error is one line
naming the fix and writes nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pebench.cli import main

ROOT = Path(__file__).resolve().parents[2]


def pebench(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m pebench ARGS`` from ``cwd``, with this checkout's pebench first on the path."""
    env = {k: v for k, v in os.environ.items() if k != "PEBENCH_DB" and not k.startswith("PYTEST_XDIST_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)  # fmt: skip


def listing(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


# kind, name, --dir, suite arguments of one tiny case that uses it
KINDS = [
    ("encoding", "my_pe", ".", ["--encoding", "my_pe", "--task", "k_back", "-k", "L64"]),
    ("task", "my_task", "sub", ["--task", "my_task", "--encoding", "alibi", "-k", "L32"]),
]


@pytest.mark.parametrize(("kind", "name", "where", "suite_args"), KINDS, ids=[k[0] for k in KINDS])
def test_new_files_pass_their_own_test_the_kit_and_a_suite_run(kind, name, where, suite_args, tmp_path, run_suite,
                                                               tiny):  # fmt: skip
    made = pebench("pebench", "new", kind, name, *(["--dir", where] if where != "." else []), cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    plugin, test = Path(where) / f"{name}.py", Path(where) / f"test_{name}.py"
    assert made.stdout.startswith(f"wrote {plugin} and {test}; next: pytest {test}")
    assert listing(tmp_path / where) == [f"{name}.py", f"test_{name}.py"]
    text = (tmp_path / plugin).read_text()
    assert "@register" in text and f'name = "{name}"' in text and "docs/extending.md" in text

    tested = pebench("pytest", str(test), "-q", "-p", "no:cacheprovider", cwd=tmp_path)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "2 passed" in tested.stdout  # the kit and the property test of the one hook
    assert not (tmp_path / ".benchmarks").exists()  # pytest-benchmark's storage: nothing was saved in it

    checked = pebench("pebench", "check", str(plugin), cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.splitlines()[0] == f"{kind} {name} (plugin {tmp_path / plugin}): conforms"
    assert checked.stdout.splitlines()[-1] == "1 of 1 conform"
    if kind == "encoding":
        assert "PASS  shift invariance" in checked.stdout  # a relative family, and it is shift-invariant

    db = f"sqlite:///{tmp_path / 'r.db'}"
    res = run_suite("--plugin", str(plugin), *suite_args, "--steps", "3", *tiny, "--db", db, "--no-cache")
    assert res.returncode == 0, res.output
    assert "1 passed" in res.stdout


def test_the_written_files_are_the_templates(tmp_path):
    from pebench.testing.new import class_name, plan

    files = plan("encoding", "my_pe", tmp_path)
    assert list(files) == [tmp_path / "my_pe.py", tmp_path / "test_my_pe.py"]
    assert "class MyPe(PositionalEncoding):" in files[tmp_path / "my_pe.py"]
    assert "$" not in "".join(files.values())  # every placeholder filled
    assert class_name("my__pe2") == "MyPe2" and class_name("_x") == "X"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["bias", "my_pe"], "unknown kind 'bias'; valid kinds: encoding, task (pebench new encoding|task NAME)"),
        (["encoding", "My-PE"], "invalid NAME 'My-PE': give a lower-case Python identifier"),
        (["encoding", "MyPE"], "invalid NAME 'MyPE': give a lower-case Python identifier"),
        (["task", "2back"], "invalid NAME '2back': give a lower-case Python identifier"),
        (["task", "lambda"], "invalid NAME 'lambda': give a lower-case Python identifier"),
        (["encoding", "alibi"], "encoding 'alibi' clashes with the encoding 'alibi' from built-in "
                                "pebench.encodings.alibi; choose another NAME"),  # fmt: skip
        (["task", "k_back"], "task 'k_back' clashes with the task 'k_back' from built-in pebench.tasks.k_back; "
                             "choose another NAME"),  # fmt: skip
        (["task", "torch"], "NAME 'torch' is the name of an importable module, which torch.py would shadow"),
        (["encoding", "my_pe", "--dir", "new/deeper"], "{tmp}/new/deeper/test_my_pe.py already exists; pebench new "
                                                       "never overwrites: remove it, or choose another NAME or --dir"),
    ],
)
def test_an_error_is_one_line_and_writes_nothing(args, message, tmp_path, monkeypatch, capsys):
    if "--dir" in args:  # the test file is there, the plugin file is not: neither is written
        (tmp_path / "new" / "deeper").mkdir(parents=True)
        (tmp_path / "new" / "deeper" / "test_my_pe.py").write_text("# mine\n")
        args = [*args[:-1], str(tmp_path / args[-1])]
    monkeypatch.chdir(tmp_path)
    before = listing(tmp_path)
    assert main(["new", *args]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith("pebench: error: " + message.format(tmp=tmp_path))
    assert listing(tmp_path) == before
    if "--dir" in args:
        assert (tmp_path / "new" / "deeper" / "test_my_pe.py").read_text() == "# mine\n"
