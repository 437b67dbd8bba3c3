"""The package's shape: no module past ~450 lines, and imports that only point down the layers (a module never
imports from a layer above its own), so each folder says what it does and depends only on what lies beneath it."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "pebench"
MAX_LINES = 450
LAYERS = [
    {"errors", "hashing", "options", "registry", "device", "metrics", "case", "status"},
    {"encodings", "tasks", "models", "plugins"},
    {"training", "packing", "stopping", "evaluation", "checkpoints"},
    {"store", "provenance"},
    {"analysis"},
    {"settings", "runner"},
    {"report", "bench", "testing"},
    {"suite", "cli", "results", "__main__", "__init__"},
]
LAYER_OF = {name: i for i, names in enumerate(LAYERS) for name in names}


def _unit(path: Path) -> str:
    """The top-level unit of a module: its subpackage or its module name."""
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def test_no_module_is_longer_than_the_limit():
    long = {str(p.relative_to(PACKAGE)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_LINES}  # fmt: skip
    assert not long, long


def test_imports_only_point_down():
    upward = []
    for path in PACKAGE.rglob("*.py"):
        unit = _unit(path)
        assert unit in LAYER_OF, f"{unit} is in no layer of this test"
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names if node.module == "pebench"]
            for name in names:
                parts = name.split(".")
                if parts[0] != "pebench" or len(parts) < 2:
                    continue
                target = parts[1]
                if target in LAYER_OF and LAYER_OF[target] > LAYER_OF[unit]:
                    upward.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert not upward, upward
