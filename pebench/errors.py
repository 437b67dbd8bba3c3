"""Errors a user can cause, each with a one-line message that names the valid choices."""

from __future__ import annotations

from collections.abc import Iterable, Mapping


class PebenchError(Exception):
    """Base class of every error caused by bad input (names, lengths, options, database URLs)."""


class UnknownNameError(PebenchError, KeyError):
    """An encoding, task or other registered name that does not exist."""

    def __init__(self, kind: str, name: str, valid: Iterable[str]) -> None:
        self.kind = kind
        self.name = name
        self.valid = sorted(valid)
        super().__init__(f"unknown {kind} {name!r}; valid {kind}s: {', '.join(self.valid)}")

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return str(self.args[0])


class OptionError(PebenchError, ValueError):
    """An option an encoding or task does not take, or a value outside its valid range."""


class LengthError(PebenchError, ValueError):
    """A sequence length a task cannot produce."""


class PluginError(PebenchError):
    """A ``--plugin`` (or ``pebench_plugins``) that cannot be loaded, or an entry point that fails to import."""


class NameClashError(PebenchError, ValueError):
    """Two encodings (or tasks) registered under one name from different sources, e.g. a plugin and a built-in."""


class InvalidNameError(PebenchError, ValueError):
    """An encoding or task registered under a name that is not a lower-case Python identifier
    (:data:`pebench.registry.NAME_RULE`)."""


class DatabaseError(PebenchError):
    """A results database URL that cannot be opened or is not a database."""


class ConfigError(PebenchError, ValueError):
    """A model, training or tolerance setting out of range.

    ``template`` names the settings as ``{field}``; :meth:`render` writes them as the user typed them (e.g.
    ``--d-model``) when given a field -> name map, and plain ``str()`` as ``owner: field ...``.
    """

    def __init__(self, owner: str, template: str) -> None:
        self.owner = owner
        self.template = template
        super().__init__(self.render())

    @property
    def fields(self) -> list[str]:
        import re

        return re.findall(r"\{(\w+)\}", self.template)

    def render(self, names: Mapping[str, str] | None = None) -> str:
        text = self.template.format(**{f: (names or {}).get(f, f) for f in self.fields})
        return text if names else f"{self.owner}: {text}"
