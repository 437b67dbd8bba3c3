"""Encodings and tasks from outside the package: plugin files and modules, and installed packages' entry points.

A plugin is a Python file (``my_pe.py``) or an importable module (``my_lab.encodings``) whose ``@register``
classes (:func:`pebench.encodings.register`, :func:`pebench.tasks.register`) become suite parameters as soon as it
is imported. The suite loads the plugins named by ``--plugin`` (repeatable) and by the ini option
``pebench_plugins`` (``pyproject.toml``'s ``[tool.pytest.ini_options]``, ``pytest.ini``; paths relative to that
file), and ``pebench list`` / ``pebench check`` do the same. Installed packages contribute through the entry-point
groups :data:`ENTRY_POINT_GROUPS` (``pebench.encodings``, ``pebench.tasks``): an entry point names a module (its
``@register`` classes count) or a class (registered under its ``name``).

Each registration remembers its source (:meth:`pebench.registry.Registry.source`): ``plugin /abs/my_pe.py``,
``plugin module my_lab.encodings``, ``entry point pebench.encodings:NAME (DIST VERSION)``. A name registered from two
sources (a built-in, another plugin) is a one-line :class:`~pebench.errors.NameClashError` naming both. A plugin's
source files take part in :func:`pebench.engine.code.code_version` (:func:`external_files`), so ``--reuse`` never
copies a result trained with other plugin code, and in the key of its checkpoints.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import re
import shlex
import sys
import traceback
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pebench.encodings  # noqa: F401  (the built-ins register before any plugin)
import pebench.tasks  # noqa: F401
from pebench.encodings.base import PositionalEncoding
from pebench.encodings.registry import ENCODINGS
from pebench.errors import PebenchError, PluginError
from pebench.registry import Registry, loading
from pebench.tasks.base import Task
from pebench.tasks.registry import TASKS

ENTRY_POINT_GROUPS: dict[str, tuple[Registry[Any], type]] = {
    "pebench.encodings": (ENCODINGS, PositionalEncoding),
    "pebench.tasks": (TASKS, Task),
}
"""Entry-point group -> (the registry it fills, the base class its classes subclass)."""

INI_OPTION = "pebench_plugins"
"""The ini option (pytest's configuration file) listing plugins, as ``--plugin`` does."""

_MODULE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
_USAGE = "give a path to a .py file or an importable module name"


@dataclass(frozen=True)
class Plugin:
    """A loaded plugin: how it was given, its source label, its module, its file and what it registered."""

    spec: str
    source: str
    module: str
    path: Path | None
    names: tuple[str, ...]

    @property
    def reload_spec(self) -> str:
        """The spec that loads it again from any directory (an absolute path, or the module name)."""
        return str(self.path) if self.spec_is_path else self.module

    @property
    def spec_is_path(self) -> bool:
        return _is_path(self.spec)


_LOADED: dict[str, Plugin] = {}
_ENTRY_POINTS: list[Plugin] | None = None


def _is_path(spec: str) -> bool:
    return spec.endswith(".py") or "/" in spec or "\\" in spec


def _registries() -> list[tuple[str, Registry[Any]]]:
    return [("encoding", ENCODINGS), ("task", TASKS)]


def _registered_by(source: str, module: str) -> tuple[str, ...]:
    """``kind name`` of every entry from ``source`` or defined in ``module`` (or its submodules)."""
    out = []
    for kind, registry in _registries():
        for name in registry.names():
            mod = getattr(registry.get(name), "__module__", "") or ""
            if registry.source(name) == source or mod == module or mod.startswith(module + "."):
                out.append(f"{kind} {name}")
    return tuple(out)


def _where(err: BaseException, path: Path | None) -> str:
    """`` (file:line)`` of the error: a syntax error's own place, else the deepest frame in the plugin's file (or
    the deepest frame)."""
    if isinstance(err, SyntaxError) and err.filename:
        return f" ({err.filename}:{err.lineno})"
    frames = traceback.extract_tb(err.__traceback__)
    mine = [f for f in frames if path is not None and Path(f.filename) == path] or frames[-1:]
    return f" ({mine[-1].filename}:{mine[-1].lineno})" if mine else ""


def _import_failed(source: str, err: BaseException, path: Path | None) -> PluginError:
    first = (str(err).strip().splitlines() or [""])[0]
    return PluginError(f"{source} failed to import: {type(err).__name__}: {first}{_where(err, path)}")


def load(spec: str, base: Path | None = None) -> Plugin:
    """Import the plugin ``spec`` (a ``.py`` path, relative to ``base`` or the current directory, or a module
    name) once per process and return it. Errors are one line (:class:`~pebench.errors.PluginError`,
    :class:`~pebench.errors.NameClashError`); a plugin that registers nothing is one too."""
    spec = spec.strip()
    if not spec:
        raise PluginError(f"--plugin '': {_USAGE}")
    if _is_path(spec):
        path = ((base or Path.cwd()) / Path(spec).expanduser()).resolve()
        if not path.is_file():
            raise PluginError(f"--plugin {spec!r}: no such file {str(path)!r}; {_USAGE}")
        key, source = str(path), f"plugin {path}"
        stem = re.sub(r"\W", "_", path.stem)
        module = f"_pebench_plugin_{stem}_{hashlib.sha256(key.encode()).hexdigest()[:8]}"
    elif _MODULE.match(spec):
        key, source, module, path = spec, f"plugin module {spec}", spec, None
    else:
        raise PluginError(f"--plugin {spec!r}: {_USAGE}")
    if key in _LOADED and module in sys.modules:
        return _LOADED[key]
    is_file = path is not None
    with loading(source):
        try:
            if path is not None:
                _exec_file(module, path)
            else:
                mod = importlib.import_module(module)
                path = Path(mod.__file__).resolve() if getattr(mod, "__file__", None) else None
        except Exception as err:
            if is_file:  # a failed import leaves no half-made module behind (importlib does so for the others)
                sys.modules.pop(module, None)
            if isinstance(err, PebenchError):  # a name clash: already one line naming both sources
                raise
            if isinstance(err, ModuleNotFoundError) and not is_file and err.name and \
                    (spec == err.name or spec.startswith(err.name + ".")):  # fmt: skip
                raise PluginError(f"--plugin {spec!r}: no module named {err.name!r}; {_USAGE}") from None
            raise _import_failed(source, err, path) from None
    names = _registered_by(source, module)
    if not names:
        raise PluginError(f"{source} registered no encoding or task: decorate a PositionalEncoding subclass with "
                          "@pebench.encodings.register or a Task subclass with @pebench.tasks.register")  # fmt: skip
    _LOADED[key] = Plugin(spec, source, module, path, names)
    return _LOADED[key]


def _exec_file(module: str, path: Path) -> None:
    """Import ``path`` as module ``module`` (its directory joins ``sys.path``, as for a script, so it may import
    its neighbours), writing no bytecode beside it: a run leaves in the user's directory only what it says it
    writes, whether or not PYTHONDONTWRITEBYTECODE is set."""
    if str(path.parent) not in sys.path:
        sys.path.append(str(path.parent))
    spec = importlib.util.spec_from_file_location(module, path)
    if spec is None or spec.loader is None:
        raise PluginError(f"--plugin {str(path)!r}: not a Python file; {_USAGE}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[module] = mod  # before running it: dataclasses and pickling look the module up
    before, sys.dont_write_bytecode = sys.dont_write_bytecode, True  # no __pycache__/ beside the user's file
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.dont_write_bytecode = before


def load_all(specs: Iterable[str], base: Path | None = None) -> list[Plugin]:
    """:func:`load` each of ``specs`` (relative paths against ``base``)."""
    return [load(s, base) for s in specs]


def load_session(ini: Iterable[str], ini_base: Path | None, given: Iterable[str], given_base: Path | None) -> None:
    """What a suite session or a ``pebench`` command loads, in this order: the installed entry points, the ini
    option's plugins (paths relative to the ini file's directory ``ini_base``), then ``--plugin``'s (relative to
    ``given_base``, the invocation directory)."""
    load_entry_points()
    load_all(ini, ini_base)
    load_all(given, given_base)


def load_entry_points() -> list[Plugin]:
    """Load every installed entry point of :data:`ENTRY_POINT_GROUPS`, once per process."""
    global _ENTRY_POINTS
    if _ENTRY_POINTS is not None:
        return _ENTRY_POINTS
    from importlib.metadata import entry_points

    out = []
    for group, (registry, base) in ENTRY_POINT_GROUPS.items():
        for ep in entry_points(group=group):
            dist = getattr(ep, "dist", None)
            owner = f"{dist.name} {dist.version}" if dist is not None else "an installed package"
            source = f"entry point {group}:{ep.name} ({owner})"
            with loading(source):
                try:
                    obj = ep.load()
                except PebenchError:
                    raise
                except Exception as err:
                    raise PluginError(f"{_import_failed(source, err, None)}; fix or uninstall {owner}") from None
                if inspect.isclass(obj):
                    if not issubclass(obj, base):
                        raise PluginError(f"{source} names {obj.__qualname__}, which is no {base.__name__} subclass")
                    registry.add(getattr(obj, "name", ""), obj, source)
                elif not inspect.ismodule(obj):
                    raise PluginError(f"{source} names {obj!r}: give a module or a {base.__name__} subclass")
            module = obj.__module__ if inspect.isclass(obj) else obj.__name__
            out.append(Plugin(ep.value, source, module, None, _registered_by(source, module)))
    _ENTRY_POINTS = out
    return out


def loaded() -> list[Plugin]:
    """The plugins loaded so far with :func:`load` (not entry points), in order."""
    return list(_LOADED.values())


def external_files(*classes: type | None) -> list[Path]:
    """The source files of ``classes`` (and of the class a wrapper wraps, ``inner_cls``) outside pebench, the
    standard library and torch: a plugin's code. Empty for pebench's own classes."""
    files: set[Path] = set()
    todo = [c for c in classes if c is not None]
    todo += [c.inner_cls for c in list(todo) if isinstance(getattr(c, "inner_cls", None), type)]
    for cls in todo:
        for klass in cls.__mro__:
            module = inspect.getmodule(klass)
            name = getattr(module, "__name__", "") or ""
            top = name.split(".")[0]
            if module is None or not getattr(module, "__file__", None) or top in ("pebench", "torch", "builtins"):
                continue
            if top in sys.stdlib_module_names:
                continue
            files.add(Path(module.__file__).resolve())
    return sorted(files)


def configured(start: Path | None = None) -> tuple[list[str], Path | None]:
    """The ``pebench_plugins`` of the pytest configuration file pytest would use from ``start`` (default: the
    current directory): the nearest ``pytest.ini``, ``.pytest.ini``, ``pyproject.toml`` with
    ``[tool.pytest.ini_options]``, ``tox.ini`` with ``[pytest]`` or ``setup.cfg`` with ``[tool:pytest]`` at or
    above it; and that file's directory (the base of relative paths). ([], None) without one."""
    import configparser

    here = (start or Path.cwd()).resolve()
    for d in (here, *here.parents):
        for name, section in (("pytest.ini", "pytest"), (".pytest.ini", "pytest"), ("pyproject.toml", None),
                              ("tox.ini", "pytest"), ("setup.cfg", "tool:pytest")):  # fmt: skip
            path = d / name
            if not path.is_file():
                continue
            if section is None:
                table = _pytest_table(path)
                if table is None:
                    continue
                value = table.get(INI_OPTION, [])
                return (shlex.split(value) if isinstance(value, str) else [str(v) for v in value]), d
            parser = configparser.ConfigParser(interpolation=None)
            try:
                parser.read(path)
            except configparser.Error:
                continue
            if not parser.has_section(section):
                if name in ("pytest.ini", ".pytest.ini"):
                    return [], d  # pytest.ini is the configuration even without a [pytest] section
                continue
            return shlex.split(parser.get(section, INI_OPTION, fallback="")), d
    return [], None


def _pytest_table(path: Path) -> dict[str, Any] | None:
    """``[tool.pytest.ini_options]`` of a ``pyproject.toml`` (None when it has none or cannot be read)."""
    try:
        import tomllib
    except ImportError:  # Python 3.10: pytest depends on tomli there
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, ValueError):
        return None
    pytest_table = data.get("tool", {}).get("pytest")
    if not isinstance(pytest_table, dict):
        return None
    table = pytest_table.get("ini_options", pytest_table)  # pytest 9 also reads a native [tool.pytest] table
    return table if isinstance(table, dict) else None
