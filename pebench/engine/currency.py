"""Whether a stored result's configuration is the one this pebench builds for its case (``pebench results --stale``,
the first of a cell's two tests of currency; the second, its behaviour, is :mod:`pebench.engine.fingerprint`'s).

A result stores its full configuration (:func:`pebench.engine.configuration.describe`: the encoding's resolved
options, the task's, the model, the training) and its run stores its command-line options. A changed default -- RoPE's
``base``, a task's default steps, a model field without a flag -- changes what ``--encoding rope`` runs, but not the
probe of the stored options (the probe recomputes ``base=10000`` as it was). So the configuration is rebuilt here with
this pebench's code, from the run's own settings, where an option the run did not set takes its *current* default
(:func:`run_settings`), and compared with the stored one (:func:`changes`). Which flags a run set: its stored
``given`` list (runs since this module), else the flags its stored command lines name (the run's and, for a merged
run, each part's); a run with neither keeps every stored value as set.

The device is not rebuilt (``--precision auto`` resolves on this machine's); a sweep point's values are the run's
stored ``--sweep``, learning-rate protocol and ``--extend`` axis, at the result's stored axes (no case id is parsed).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pebench.case import Case, Point
from pebench.engine import extension
from pebench.engine.configuration import build_task, describe
from pebench.engine.settings import FLAGS, Settings, dests
from pebench.engine.sweep import Sweep
from pebench.options import parse_assignments

GIVEN_KEY = "given"
"""The key of ``runs.options`` that lists the run-scoped flags (destinations) its command gave."""
NOT_REBUILT = frozenset({"device"})
"""Settings a stored run's configuration is not rebuilt with (this machine's, not the run's)."""


def given_of(options: Mapping[str, Any], commands: Iterable[str] = ()) -> set[str] | None:
    """The setting destinations a run set: its stored :data:`GIVEN_KEY`, else those whose flag one of ``commands``
    (the run's stored command lines) names; None when neither tells (every stored value counts as set)."""
    if isinstance(options.get(GIVEN_KEY), list):
        return set(options[GIVEN_KEY])
    texts = [c for c in commands if c]
    texts += [p.get("command") or "" for p in options.get("merged_from") or [] if isinstance(p, Mapping)]
    if not any(texts):
        return None
    tokens = set()
    for text in texts:
        try:
            words = shlex.split(text)
        except ValueError:
            words = text.split()
        tokens |= {w.split("=", 1)[0] for w in words if w.startswith("-")}
    return {dest for dest in dests("setting") if FLAGS[dest].flag in tokens}


def _named(items: Iterable[str] | None) -> dict[str, dict[str, Any]]:
    """``--encoding-options`` / ``--task-options`` values (``NAME:KEY=VALUE,...``) by name."""
    out: dict[str, dict[str, Any]] = {}
    for item in items or []:
        name, sep, rest = str(item).partition(":")
        if sep:
            out.setdefault(name.strip(), {}).update(parse_assignments(rest))
    return out


@dataclass(frozen=True)
class RunSettings:
    """What a stored run's cases are rebuilt with: its settings (defaults where it set nothing) and its sweep."""

    settings: Settings
    sweep: Sweep

    def describe(self, case: Case) -> dict[str, Any]:
        """The configuration this pebench builds for the stored ``case`` of the run (:func:`stored_case`)."""
        settings = self.sweep.settings(self.settings, case.point) if self.sweep else self.settings
        return describe(settings, build_task(settings, case.task), case)


def run_settings(options: Mapping[str, Any], commands: Iterable[str] = ()) -> RunSettings:
    """The settings of a run stored with ``options`` (``runs.options``) and ``commands`` (:func:`given_of`): each
    setting the run set at its stored value, every other at this pebench's default."""
    given = given_of(options, commands)
    values = {dest: options[dest] for dest in dests("setting")
              if dest not in NOT_REBUILT and options.get(dest) is not None and (given is None or dest in given)}
    settings = Settings(**values, encoding_options=_named(options.get("encoding_options")),
                        task_options=_named(options.get("task_options")))  # fmt: skip
    rates = options.get("lr_sweep")
    sweep = Sweep.parse([*(options.get("sweep") or []), *([f"lr={rates}"] if rates else [])])
    return RunSettings(settings, extension.with_axis(sweep, options.get("extend"), bool(options.get("pose")),
                                                     options.get("scaffold")))  # fmt: skip


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(value, Mapping):
        return {prefix: value}
    out: dict[str, Any] = {}
    for key, inner in value.items():
        out |= _flat(inner, f"{prefix}.{key}" if prefix else str(key))
    return out


def _label(path: str, config: Mapping[str, Any]) -> str:
    """``encoding.options.base`` -> ``rope base``; ``task.options.n`` -> ``k_back n``; ``train.steps`` -> ``train
    steps``."""
    head, _, rest = path.partition(".")
    if head in ("encoding", "task") and isinstance(config.get(head), Mapping):
        name = config[head].get("name", head)
        return f"{name} {rest.removeprefix('options.') or head}"
    return f"{head} {rest}" if rest else head


NONE = "(none)"


def changes(stored: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    """The values of configuration ``stored`` that this pebench builds otherwise in ``now``, one ``"rope base
    10000.0 -> 10001.0"`` each (``(none)`` for a value on one side only), in path order."""
    a, b = _flat(stored), _flat(now)
    differ = sorted(k for k in a.keys() | b.keys() if a.get(k, NONE) != b.get(k, NONE))
    return [f"{_label(k, stored if k in a else now)} {a.get(k, NONE)} -> {b.get(k, NONE)}" for k in differ]


def stored_case(row: Any) -> Case:
    """The case of a stored result from its columns (``encoding``, ``task``, ``eval_length``, ``seed`` and its point's
    ``axes``, :meth:`pebench.case.Point.of_stored`): no case id or point text is parsed."""
    axes = getattr(row, "axes", None)
    return Case(str(row.encoding), str(row.task), int(row.eval_length), int(getattr(row, "seed", 0) or 0),
                Point.of_stored(axes if isinstance(axes, list) else None))  # fmt: skip


def drift(config: Mapping[str, Any] | None, case: Case, run: RunSettings | str | None) -> str:
    """Why the stored ``config`` of ``case`` (:func:`stored_case`) is not the configuration this pebench builds for it
    at its run's settings ``run`` (``"default changed: rope base 10000.0 -> 10001.0"``; a string: why the run's
    settings cannot be rebuilt); "" when it is, or when there is nothing to compare (no configuration or run
    stored)."""
    if not config or run is None:
        return ""
    if isinstance(run, str):
        return run
    try:
        now = run.describe(case)
    except Exception as err:  # an option or encoding this pebench no longer builds: the cell is not current
        return f"its configuration cannot be built now: {type(err).__name__}: {err}"
    found = changes(config, now)
    if not found:
        return ""
    versions = [c for c in found if c.split(" ", 2)[1] == "version"]
    what = "version changed" if versions and len(versions) == len(found) else "default changed"
    return f"{what}: {'; '.join(found)}"
