"""``--sweep NAME=V1,V2,...``: one more axis of cases over a setting or an option (issue 30, item 1).

A sweep names a model or training setting by its flag without the dashes (``layers``, ``heads``, ``d_model``,
``lr``, ``steps``, ``batch_size``, ``weight_decay`` ...: every flag :class:`~pebench.engine.settings.Settings` takes
but ``--device``), or an option of one encoding or task as ``OWNER:OPTION`` (``rope:base=100,10000``,
``assoc_recall:n_pairs=4,8,16``). Several sweeps multiply. Each combination that applies to an (encoding, task) is
a *point*: a sweep of a setting applies to every case, one of an encoding's (a task's) options only to the cases of
that encoding (task), so ``--sweep rope:base=100,10000`` gives rope two points and ALiBi none.

A point is typed (:class:`pebench.case.Point`, axis name -> value); in the case id it is the part after the length,
one ``{name}{value}`` per swept axis, joined by ``-`` (``rope-k_back-L64-layers4``,
``rope-k_back-L64-layers4-lr0.01-s1``; :class:`pebench.case.Case`), so ``-k layers4`` selects it. Each point is its
own configuration: its settings are the run's with the point's values (:meth:`Sweep.settings`), so its models have
their own config hash and are trained, checkpointed, reused, sharded and merged as any other. A float is written with
``:g`` (``0.01``, ``1e-05``), anything else as given.

Invalid input is one line before any training: an unknown name (naming the valid ones), a value of the wrong type,
an empty or repeated value, a name swept twice, two options of the same name from different owners (their id parts
would clash), a value that would make its point's id read back as another point (``-`` and another axis's name in a
value); values out of range are caught by the settings' and options' own checks for every point.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from pebench import encodings, tasks
from pebench.case import VALUE, Point
from pebench.engine.settings import FLAGS, Settings, dests
from pebench.errors import PebenchError


def sweepable() -> dict[str, str]:
    """Sweep name -> the :class:`Settings` field it sets: every setting flag but ``--device`` and the switches
    (``--pose``, ``--no-diagnostics``), named as its flag without the dashes (``-`` written ``_``)."""
    return {FLAGS[d].flag.removeprefix("--").replace("-", "_"): d for d in dests("setting")
            if d != "device" and "action" not in FLAGS[d].options}  # fmt: skip


def _read_back(name: str, text: str, axes: Sequence[str]) -> Point | None:
    try:
        return Point.parse(f"{name}{text}", axes)
    except ValueError:
        return None


class SweepError(PebenchError):
    """A ``--sweep`` that cannot be run (one line, naming the valid choices)."""


@dataclass(frozen=True)
class Axis:
    """One swept name: a setting (``owner`` "") or an option of the encoding or task ``owner``."""

    name: str
    """The name in the case id (``layers``, ``base``)."""
    field: str
    """The :class:`Settings` field, or the option's name."""
    kind: str
    """``setting``, ``encoding`` or ``task``."""
    owner: str
    values: tuple[Any, ...]
    texts: tuple[str, ...]
    """Each value as it appears in the case id."""

    def applies(self, encoding: str, task: str) -> bool:
        return self.kind == "setting" or self.owner == (encoding if self.kind == "encoding" else task)

    def spec(self) -> str:
        owner = f"{self.owner}:" if self.owner else ""
        return f"{owner}{self.field if self.owner else self.name}={','.join(self.texts)}"


def _setting_value(text: str, name: str, dest: str, raw: str) -> tuple[Any, str]:
    flag = FLAGS[dest]
    choices = flag.options.get("choices")
    if choices is not None:
        if text not in choices:
            raise SweepError(f"--sweep {raw!r}: {name}={text!r} is invalid; valid: {', '.join(map(str, choices))}")
        return text, text
    kind = flag.options.get("type", str)
    try:
        value = kind(text)
    except ValueError:
        raise SweepError(f"--sweep {raw!r}: {name}={text!r} is not {'an' if kind is int else 'a'} "
                         f"{kind.__name__}") from None  # fmt: skip
    return value, (f"{value:g}" if isinstance(value, float) else str(value))


def _axis(raw: str) -> Axis:
    name, sep, rest = raw.partition("=")
    name = name.strip()
    if not sep or not name:
        raise SweepError(f"--sweep {raw!r} must look like NAME=V1,V2 or OWNER:OPTION=V1,V2 (e.g. layers=2,4)")
    texts = [t.strip() for t in rest.split(",")]
    if any(not t for t in texts):
        raise SweepError(f"--sweep {raw!r} has an empty value; give NAME=V1,V2,...")
    bad = next((t for t in texts if not VALUE.match(t)), None)
    if bad is not None:
        raise SweepError(f"--sweep {raw!r}: value {bad!r} may hold only letters, digits and _ . + - / :")
    if ":" in name:
        owner, _, option = (p.strip() for p in name.partition(":"))
        is_enc, is_task = owner in encodings.available(), owner in tasks.available()
        if is_enc == is_task:
            where = "both an encoding and a task" if is_enc else "no encoding or task"
            raise SweepError(f"--sweep {raw!r}: {owner!r} is {where}; sweep an option as ENCODING:OPTION or "
                             "TASK:OPTION")  # fmt: skip
        kind = "encoding" if is_enc else "task"
        declared = (encodings.get(owner) if is_enc else tasks.get(owner)).options
        if option not in declared:
            raise SweepError(f"--sweep {raw!r}: {kind} {owner} has no option {option!r}; valid options: "
                             f"{', '.join(sorted(declared)) or 'none'}")  # fmt: skip
        values = [declared[option].check(f"{kind} {owner}", option, t) for t in texts]
        axis = Axis(option, option, kind, owner, tuple(values), tuple(texts))
    else:
        names = sweepable()
        key = name.replace("-", "_")
        if key not in names:
            raise SweepError(f"--sweep {raw!r}: unknown setting {name!r}; valid: {', '.join(sorted(names))}, or "
                             "ENCODING:OPTION / TASK:OPTION")  # fmt: skip
        pairs = [_setting_value(t, key, names[key], raw) for t in texts]
        axis = Axis(key, names[key], "setting", "", tuple(v for v, _ in pairs), tuple(t for _, t in pairs))
    if len(set(axis.texts)) != len(axis.texts):
        raise SweepError(f"--sweep {raw!r} lists a value twice")
    return axis


class Sweep:
    """The swept axes of a run (none: one point, ``""``, per (encoding, task)); see the module docstring."""

    def __init__(self, axes: Sequence[Axis] = ()) -> None:
        self.axes = tuple(axes)

    @classmethod
    def parse(cls, texts: Sequence[str]) -> Sweep:
        """The sweep of the ``--sweep`` values ``texts``; :class:`SweepError` (one line) when one is invalid."""
        axes = [_axis(t) for t in texts]
        seen: dict[str, Axis] = {}
        for a in axes:
            if a.name in seen:
                other = seen[a.name]
                what = "is swept twice" if other.owner == a.owner else \
                    f"is an option of both {other.owner} and {a.owner} (their case ids would clash)"  # fmt: skip
                raise SweepError(f"--sweep: {a.name} {what}; give each name once")
            seen[a.name] = a
        for a in axes:  # each point's id reads back as that point (Point.parse): no value holds "-" and a name
            bad = next((t for t in a.texts if _read_back(a.name, t, seen) != Point(((a.name, t),))), None)
            if bad is not None:
                raise SweepError(f"--sweep {a.spec()!r}: the value {bad!r} would make the case id {a.name}{bad} read "
                                 f"back as another point (axes: {', '.join(seen)}); give values without '-' before "
                                 "an axis's name")  # fmt: skip
        return cls(axes)

    @property
    def names(self) -> tuple[str, ...]:
        """The swept axes' names, as the case ids' points are read back with them (:meth:`Case.parse`)."""
        return tuple(a.name for a in self.axes)

    def __bool__(self) -> bool:
        return bool(self.axes)

    def points(self, encoding: str, task: str) -> list[Point]:
        """The points of (``encoding``, ``task``), in the order of the axes' product (``[Point()]`` when no axis
        applies)."""
        axes = [a for a in self.axes if a.applies(encoding, task)]
        return [Point(tuple((a.name, a.texts[i]) for a, i in zip(axes, combo, strict=True)))
                for combo in itertools.product(*(range(len(a.values)) for a in axes))]  # fmt: skip

    def settings(self, base: Settings, point: Point) -> Settings:
        """``base`` with the values of ``point`` (one of :meth:`points`), checked."""
        axes = {a.name: a for a in self.axes}
        unknown = next((f"{n}{v}" for n, v in point.items() if n not in axes or v not in axes[n].texts), None)
        if unknown is not None:
            raise SweepError(f"unknown sweep point {str(point)!r} ({unknown} is swept by no axis); this run's axes: "
                             f"{' '.join(a.spec() for a in self.axes) or 'none'}")  # fmt: skip
        changes: dict[str, Any] = {}
        enc_opts = {k: dict(v) for k, v in base.encoding_options.items()}
        task_opts = {k: dict(v) for k, v in base.task_options.items()}
        for name, text in point.items():
            axis = axes[name]
            value = axis.values[axis.texts.index(text)]
            if axis.kind == "setting":
                changes[axis.field] = value
            else:
                opts = enc_opts if axis.kind == "encoding" else task_opts
                opts.setdefault(axis.owner, {})[axis.field] = value
        settings = replace(base, encoding_options=enc_opts, task_options=task_opts, **changes)
        settings.check()
        return settings

    def to_list(self) -> list[str]:
        """The axes as ``--sweep`` values (stored with the run)."""
        return [a.spec() for a in self.axes]
