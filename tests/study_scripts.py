"""The study scripts under ``studies/`` (run as ``python studies/<topic>/<name>.py`` from the repository root, not a
package) as modules for the tests: :func:`load`."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load(path: str) -> ModuleType:
    """The study script at ``path`` (``studies/<topic>/<name>.py``, from the repository root) as the module
    ``studies_<topic>_<name>``, the name the scripts give one another, loaded once."""
    name = "_".join(Path(path).with_suffix("").parts)
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # before running it: dataclasses look their module up
    spec.loader.exec_module(module)
    return module
