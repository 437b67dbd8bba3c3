"""Declared, validated options for encodings and tasks.

Every configurable encoding or task declares its options as :class:`Option` objects; :func:`resolve` merges the
user's values with the defaults and rejects unknown names or out-of-range values with a one-line message.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pebench.errors import OptionError


@dataclass(frozen=True)
class Option:
    """One option: default, type, and the valid range (``low``/``high`` bounds, open or closed) or choices."""

    default: Any
    help: str = ""
    type: type = float
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple[Any, ...] | Callable[[], Sequence[Any]] | None = None
    """The valid values, or a function returning them when they are only known at run time (e.g. every encoding
    registered with some capability)."""
    eval_only: bool = False
    """True when the option changes only how a trained model is evaluated, never its training: models that differ
    only in such options are the same model (the runner trains one and shares its checkpoint)."""

    @property
    def valid_choices(self) -> tuple[Any, ...] | None:
        if self.choices is None:
            return None
        return tuple(self.choices() if callable(self.choices) else self.choices)

    def describe_range(self) -> str:
        if self.choices is not None:
            return "one of " + ", ".join(repr(c) for c in self.valid_choices or ())
        if self.low is None and self.high is None:
            return f"any {self.type.__name__}"
        lo = "-inf" if self.low is None else f"{self.low:g}"
        hi = "inf" if self.high is None else f"{self.high:g}"
        left = "(" if (self.low is None or self.low_open) else "["
        right = ")" if (self.high is None or self.high_open) else "]"
        return f"{self.type.__name__} in {left}{lo}, {hi}{right}"

    def check(self, owner: str, name: str, value: Any) -> Any:
        if self.choices is not None:
            if value not in (self.valid_choices or ()):
                raise OptionError(f"{owner}: option {name}={value!r} is invalid; valid: {self.describe_range()}")
            return value
        try:
            if self.type is bool and isinstance(value, str):
                if value.lower() not in ("true", "false", "1", "0"):
                    raise ValueError(value)
                converted: Any = value.lower() in ("true", "1")
            elif self.type is int and isinstance(value, float) and not value.is_integer():
                raise ValueError(value)  # int(2.5) would silently truncate
            else:
                converted = self.type(value)
        except (TypeError, ValueError):
            raise OptionError(
                f"{owner}: option {name}={value!r} is not a {self.type.__name__}; valid: {self.describe_range()}"
            ) from None
        if isinstance(converted, float) and not math.isfinite(converted):
            raise OptionError(f"{owner}: option {name}={value!r} must be finite; valid: {self.describe_range()}")
        bad_low = self.low is not None and (converted <= self.low if self.low_open else converted < self.low)
        bad_high = self.high is not None and (converted >= self.high if self.high_open else converted > self.high)
        if bad_low or bad_high:
            raise OptionError(f"{owner}: option {name}={value!r} is out of range; valid: {self.describe_range()}")
        return converted


def resolve(owner: str, declared: Mapping[str, Option], given: Mapping[str, Any] | None) -> dict[str, Any]:
    """Defaults overridden by ``given``; an unknown name or invalid value raises :class:`OptionError`."""
    given = dict(given or {})
    unknown = sorted(set(given) - set(declared))
    if unknown:
        valid = ", ".join(sorted(declared)) or "none"
        raise OptionError(f"{owner}: unknown option {unknown[0]!r}; valid options: {valid}")
    return {name: opt.check(owner, name, given.get(name, opt.default)) for name, opt in declared.items()}


def parse_assignments(text: str | None) -> dict[str, str]:
    """Parse ``"a=1,b=x"`` (the command-line form of options) into a dict of strings."""
    out: dict[str, str] = {}
    if not text:
        return out
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "=" not in part:
            raise OptionError(f"option {part!r} must be written as name=value")
        key, value = part.split("=", 1)
        if not key.strip():
            raise OptionError(f"option {part!r} has no name; it must be written as name=value")
        out[key.strip()] = value.strip()
    return out


FLAG = "pebench_flag"
"""The key of a dataclass field's ``metadata`` under which :func:`flag` declares its command-line flag."""


@dataclass(frozen=True)
class FlagSpec:
    """The command-line side of a field of :class:`pebench.engine.train_config.TrainConfig` or
    :class:`pebench.models.ModelConfig`: ``pebench.engine.settings`` turns every field declared with :func:`flag` into a
    suite and CLI flag, a :class:`pebench.engine.settings.Settings` attribute and, unless ``stored`` is False, an option
    stored with each run."""

    help: str
    name: str | None = None
    """The flag without its dashes (default: the field's name with ``-`` for ``_``)."""
    choices: tuple[Any, ...] | None = None
    stored: bool = True
    """Whether the value is stored in ``runs.options``."""
    scopes: tuple[str, ...] = ()
    """Further places the flag applies (:data:`pebench.engine.settings.SCOPES`), e.g. ``sizes`` for ``pebench
    bench``."""


def flag(help: str, name: str | None = None, choices: Sequence[Any] | None = None, stored: bool = True,
         scopes: Sequence[str] = ()) -> dict[str, FlagSpec]:  # fmt: skip
    """``field(metadata=flag(...))``: declare a config field's command-line flag (see :class:`FlagSpec`); its
    default and type are the field's own, and the config's ``__post_init__`` validates its values."""
    return {FLAG: FlagSpec(help, name, tuple(choices) if choices is not None else None, stored, tuple(scopes))}
