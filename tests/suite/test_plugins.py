"""Plugins (issue 29, item 2): ``--plugin PATH.py|MODULE`` and the ini option ``pebench_plugins`` add a user's
encodings and tasks to the suite; a clash or a broken plugin is one line and writes nothing; a plugin's source takes
part in ``code_version`` and in its checkpoints' key; ``pebench list`` marks where each entry comes from. (The wheel,
``pebench run`` and entry points of an installed package: ``tests/test_install.py``.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from plugin_files import BROKEN, EMPTY, my_pe, write

import pebench.results as results
from pebench import encodings, plugins, tasks
from pebench.cli import main
from pebench.encodings.registry import ENCODINGS
from pebench.engine.code import code_version
from pebench.engine.runner import Case, Runner
from pebench.engine.settings import Settings
from pebench.registry import BUILT_IN
from pebench.suite.autoload import targets_suite


def test_a_plugin_file_and_the_ini_option_add_suite_parameters(run_suite, tiny, tmp_path):
    """A ``--plugin`` file (relative to the invocation directory) and an ini ``pebench_plugins`` entry (relative to
    the ini file) both become suite parameters at once; the run records the plugins it used."""
    my_pe(tmp_path)  # my_pe.py in the invocation directory
    my_pe(tmp_path / "cfg" / "plugins", name="ini_pe")
    write(tmp_path / "cfg", "pytest.ini", "[pytest]\npebench_plugins = plugins/ini_pe.py\n")
    db = f"sqlite:///{tmp_path / 'r.db'}"
    res = run_suite("-c", str(tmp_path / "cfg" / "pytest.ini"), "--plugin", "my_pe.py", "--encoding", "my_pe,ini_pe",
                    "--task", "k_back", "-k", "L64", "--steps", "3", *tiny, "--db", db, "--no-cache")  # fmt: skip
    assert res.returncode == 0, res.output
    df = results.load(db)
    assert sorted(df["encoding"]) == ["ini_pe", "my_pe"] and set(df["status"]) == {"ok"}
    assert df["run_options"].iloc[0]["plugins"] == ["plugins/ini_pe.py", "my_pe.py"]  # as given: ini, then --plugin
    assert "2 passed" in res.stdout


def test_a_clash_is_one_line_naming_both_sources_and_writes_nothing(run_suite, tmp_path):
    my_pe(tmp_path, name="alibi", file="mine.py")
    res = run_suite("--plugin", "mine.py", "--db", f"sqlite:///{tmp_path / 'r.db'}")
    assert res.returncode == 4, res.output
    (line,) = res.stderr.strip().splitlines()
    assert line == (f"ERROR: encoding 'alibi' from plugin {tmp_path / 'mine.py'} clashes with the encoding 'alibi' "
                    "from built-in pebench.encodings.alibi; rename one of them (its name attribute)")  # fmt: skip
    assert not (tmp_path / "r.db").exists()


@pytest.mark.parametrize(
    ("files", "given", "expected"),
    [
        ({}, "nowhere.py", "--plugin 'nowhere.py': no such file '{tmp}/nowhere.py'; give a path to a .py file or an "
                           "importable module name"),
        ({}, "no_such_module_xyz", "--plugin 'no_such_module_xyz': no module named 'no_such_module_xyz'; give a "
                                   "path to a .py file or an importable module name"),
        ({}, "not a module", "--plugin 'not a module': give a path to a .py file or an importable module name"),
        ({"broken.py": BROKEN}, "broken.py", "plugin {tmp}/broken.py failed to import: NameError: name "
                                             "'undefined_name' is not defined ({tmp}/broken.py:5)"),
        ({"empty.py": EMPTY}, "empty.py", "plugin {tmp}/empty.py registered no encoding or task: decorate a "
                                          "PositionalEncoding subclass with @pebench.encodings.register or a Task "
                                          "subclass with @pebench.tasks.register"),
    ],
    ids=["missing-file", "missing-module", "bad-spec", "import-error", "registers-nothing"],
)  # fmt: skip
def test_a_plugin_that_cannot_load_is_one_line(isolated, capsys, monkeypatch, tmp_path, files, given, expected):
    monkeypatch.chdir(tmp_path)
    for name, text in files.items():
        write(tmp_path, name, text)
    assert main(["list", "encodings", "--plugin", given]) == 2
    err = capsys.readouterr().err
    assert err == f"pebench: error: {expected.format(tmp=tmp_path.resolve())}\n"
    assert "forgotten" not in encodings.available()


def test_two_plugins_of_one_name_clash_naming_both_files(isolated, capsys, tmp_path):
    first, second = my_pe(tmp_path / "a"), my_pe(tmp_path / "b")
    assert main(["list", "encodings", "--plugin", str(first), "--plugin", str(second)]) == 2
    assert capsys.readouterr().err == (
        f"pebench: error: encoding 'my_pe' from plugin {second} clashes with the encoding 'my_pe' from plugin {first}; "
        "rename one of them (its name attribute)\n")  # fmt: skip


def test_list_marks_where_each_entry_comes_from(isolated, capsys, tmp_path):
    path = my_pe(tmp_path)
    loaded = plugins.load(str(path))
    assert loaded.names == ("encoding my_pe",) and loaded.source == f"plugin {path}"
    assert main(["list", "encodings"]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert lines["my_pe"].endswith(f"[a user's plugin]  (from plugin {path})")
    assert "(from" not in lines["alibi"] and ENCODINGS.source("alibi") == BUILT_IN
    assert main(["list", "tasks", "--plugin", str(path)]) == 0  # loading a plugin twice is one load
    assert "(from" not in capsys.readouterr().out
    # a plugin encoding that reads positions is wrappable like a built-in one: randomized_my_pe exists at once
    assert encodings.get("randomized_my_pe").inner_cls is encodings.get("my_pe")


def test_plugin_source_takes_part_in_code_version_and_the_checkpoint_key(isolated, tmp_path):
    runner = Runner(Settings(device="cpu", d_model=16, n_heads=2, n_layers=1))
    builtin_before = (code_version(encodings.get("alibi"), tasks.get("k_back")),
                      runner.model_key(Case("alibi", "k_back", 64)))  # fmt: skip
    path = my_pe(tmp_path)
    plugins.load(str(path))
    enc = encodings.get("my_pe")
    version, key = code_version(enc, tasks.get("k_back")), runner.model_key(Case("my_pe", "k_back", 64))
    assert plugins.external_files(enc) == [path.resolve()]
    path.write_text(path.read_text().replace("one linear distance penalty", "one linear penalty"))  # any edit
    assert code_version(enc, tasks.get("k_back")) != version
    assert runner.model_key(Case("my_pe", "k_back", 64)) != key  # an edited plugin never loads an old checkpoint
    # pebench's own classes: no external file, and the same hashes as without plugins
    assert plugins.external_files(encodings.get("alibi"), tasks.get("k_back")) == []
    assert (code_version(encodings.get("alibi"), tasks.get("k_back")),
            runner.model_key(Case("alibi", "k_back", 64))) == builtin_before  # fmt: skip


def test_a_module_plugin_and_the_ini_reader(isolated, monkeypatch, tmp_path):
    """``--plugin MODULE`` imports an importable module; :func:`pebench.plugins.configured` finds the ini option the
    way pytest finds its configuration (pyproject's table; a pytest.ini wins in its directory)."""
    my_pe(tmp_path / "lab", name="lab_pe", file="lab_encodings.py")
    monkeypatch.syspath_prepend(str(tmp_path / "lab"))
    assert plugins.load("lab_encodings").source == "plugin module lab_encodings"
    assert ENCODINGS.source("lab_pe") == "plugin module lab_encodings"
    project = tmp_path / "project"
    write(project, "pyproject.toml", '[tool.pytest.ini_options]\npebench_plugins = ["a.py", "pkg.mod"]\n')
    (project / "sub").mkdir()
    assert plugins.configured(project / "sub") == (["a.py", "pkg.mod"], project.resolve())
    write(project, "pytest.ini", "[pytest]\n")
    assert plugins.configured(project / "sub") == ([], project.resolve())


def test_the_entry_point_loads_the_suite_only_for_sessions_that_collect_it(tmp_path):
    import pebench.suite

    here = Path(pebench.suite.__file__).parent
    assert targets_suite(["pebench.suite"], pyargs=True)
    assert targets_suite(["pebench.suite.test_positional_encodings::test_case"], pyargs=True)
    assert targets_suite([str(here / "test_positional_encodings.py") + "::test_case"], pyargs=False)
    assert not targets_suite(["pebench.suite"], pyargs=False)  # without --pyargs it is a (missing) path
    assert not targets_suite(["pebench.suites", "tests", str(tmp_path)], pyargs=True)
    assert not targets_suite([], pyargs=True)
