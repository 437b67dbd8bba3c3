"""Name -> encoding class registry. Each encoding module registers itself with :func:`register`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pebench.encodings.base import EncodingContext, PositionalEncoding
from pebench.registry import Registry

ENCODINGS: Registry[type[PositionalEncoding]] = Registry("encoding")


def register(cls: type[PositionalEncoding]) -> type[PositionalEncoding]:
    """Class decorator: make ``cls`` available under ``cls.name``."""
    return ENCODINGS.add(cls.name, cls)


def available() -> list[str]:
    """Names of every registered encoding, sorted."""
    return ENCODINGS.names()


def get(name: str) -> type[PositionalEncoding]:
    """The class registered under ``name``; an unknown name raises an error listing the valid ones."""
    return ENCODINGS.get(name)


def build(name: str, ctx: EncodingContext, options: Mapping[str, Any] | None = None) -> PositionalEncoding:
    """Instantiate encoding ``name`` for a model described by ``ctx`` with validated ``options``."""
    return get(name)(ctx, **dict(options or {}))


def describe() -> list[tuple[str, str, str]]:
    """(name, one-line description, paper) for each encoding."""
    return [(n, get(n).description, get(n).paper) for n in available()]
