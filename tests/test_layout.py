"""The package's shape: no module past ~450 lines and no function past 80, at most about ten modules at the top of the
package, imports that only point down the layers (a module never imports from a layer above its own), and no import
cycle at all, inside a layer included, so each folder says what it does and depends only on what lies beneath it."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "pebench"
MAX_LINES = 450
MAX_FUNCTION_LINES = 80
"""The longest function or method, its decorators not counted (issue 67: a longer one is split into named steps)."""
MAX_TOP_MODULES = 10
"""Modules at the top of ``pebench/`` besides ``__init__`` and ``__main__`` (the rest live in packages)."""
LAYERS = [
    {"errors", "hashing", "options", "registry", "metrics", "case", "status"},
    {"records"},
    {"encodings", "tasks", "models", "plugins"},
    {"engine"},
    {"store"},
    {"analysis"},
    {"report", "bench", "testing"},
    {"suite", "cli", "results", "__main__", "__init__"},
]
"""One layer per folder (issue 87): a subpackage or top-level module is one unit, its modules all in its layer."""
LAYER_OF = {name: i for i, names in enumerate(LAYERS) for name in names}


def _module(path: Path) -> str:
    """``pebench.store.database`` for ``pebench/store/database.py`` (``pebench.store`` for its ``__init__``)."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" and len(parts) > 2 else parts)


def _unit(module: str) -> str:
    """The layer unit of a pebench module: its subpackage or top-level module."""
    return (module.split(".")[1:] or ["__init__"])[0]


def _imports(path: Path, modules: set[str]) -> set[str]:
    """The pebench modules ``path`` imports, anywhere in the file (inside functions too)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        for name in names:
            while name and name not in modules:  # pebench.records.record.ResultRecord -> pebench.records.record
                name = name.rpartition(".")[0]
            if name.startswith("pebench"):
                out.add(name)
    return out


def _graph() -> dict[str, set[str]]:
    paths = {_module(p): p for p in PACKAGE.rglob("*.py")}
    return {m: _imports(p, set(paths)) - {m} for m, p in paths.items()}


def test_no_module_is_longer_than_the_limit():
    long = {str(p.relative_to(PACKAGE)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_LINES}  # fmt: skip
    assert not long, long


def test_no_function_is_longer_than_the_limit():
    functions = ((p, node) for p in PACKAGE.rglob("*.py") for node in ast.walk(ast.parse(p.read_text()))
                 if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef))  # fmt: skip
    long = {f"{p.relative_to(PACKAGE)}:{f.lineno} {f.name}": n for p, f in functions
            if (n := (f.end_lineno or f.lineno) - f.lineno + 1) > MAX_FUNCTION_LINES}  # fmt: skip
    assert not long, long


def test_the_top_of_the_package_holds_few_modules():
    top = sorted(p.name for p in PACKAGE.glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    assert len(top) <= MAX_TOP_MODULES, top


def test_imports_only_point_down():
    upward = []
    for module, targets in _graph().items():
        unit = _unit(module)
        assert unit in LAYER_OF, f"{unit} is in no layer of this test"
        for target in targets:
            if target != "pebench" and LAYER_OF[_unit(target)] > LAYER_OF[unit]:
                upward.append(f"{module} imports {target}")
    assert not upward, upward


def test_no_import_cycle():
    """No module reaches itself through imports (a package's ``__init__`` that imports its own modules is part of
    that package and left out, as importing the package runs it first)."""
    graph = _graph()
    graph = {m: {t for t in ts if not (m.startswith(t + ".") or t == "pebench")} for m, ts in graph.items()}
    cycles, state = [], {}

    def visit(m: str, stack: list[str]) -> None:
        state[m] = "open"
        for t in sorted(graph.get(m, ())):
            if state.get(t) == "open":
                cycles.append(" -> ".join(stack[stack.index(t):] + [m, t]) if t in stack else f"{m} -> {t}")
            elif t not in state:
                visit(t, [*stack, m])
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m, [])
    assert not cycles, cycles


@pytest.mark.slow
def test_the_layer_test_sees_a_cycle_and_an_upward_import(tmp_path):
    """The checks above are not vacuous: a planted cycle and an upward import are found."""
    global PACKAGE
    pkg = tmp_path / "pebench"
    (pkg / "store").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "errors.py").write_text("import pebench.store.a\n")
    (pkg / "store" / "__init__.py").write_text("")
    (pkg / "store" / "a.py").write_text("def f():\n    from pebench.store import b\n")
    (pkg / "store" / "b.py").write_text("from pebench.store.a import f\n")
    saved, PACKAGE = PACKAGE, pkg
    try:
        graph = _graph()
        assert "pebench.store.a" in graph["pebench.errors"]
        assert LAYER_OF[_unit("pebench.store.a")] > LAYER_OF[_unit("pebench.errors")]
        try:
            test_no_import_cycle()
        except AssertionError as err:
            assert "pebench.store.a -> pebench.store.b -> pebench.store.a" in str(err) or "pebench.store.b" in str(err)
        else:
            raise AssertionError("the planted cycle was not found")
    finally:
        PACKAGE = saved
