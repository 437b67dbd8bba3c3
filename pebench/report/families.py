"""Encoding families in the report (:attr:`pebench.encodings.PositionalEncoding.family`): the length plots are drawn
as one small chart per family, and colours and markers are handed out in family order so that the members of one
family differ. An encoding name the registry does not know (a retired encoding in an old database) is in ``other``."""

from __future__ import annotations

from collections.abc import Iterable

from pebench import encodings
from pebench.encodings.base import FAMILIES
from pebench.errors import UnknownNameError

OTHER = "other"
TITLES = {**FAMILIES, OTHER: "other encodings"}
ORDER = {name: i for i, name in enumerate(TITLES)}


def family_of(name: str) -> str:
    """The family of encoding ``name`` (``other`` when it is not registered or names none)."""
    try:
        family = encodings.get(name).family
    except UnknownNameError:
        return OTHER
    return family if family in FAMILIES else OTHER


def ordered(names: Iterable[str]) -> list[str]:
    """``names`` (once each) sorted by family, in :data:`TITLES` order, then by name."""
    return sorted(set(names), key=lambda n: (ORDER[family_of(n)], n))


def grouped(names: Iterable[str]) -> list[tuple[str, list[str]]]:
    """(family, its names in order) for the families present, in :data:`TITLES` order."""
    out: dict[str, list[str]] = {}
    for n in ordered(names):
        out.setdefault(family_of(n), []).append(n)
    return list(out.items())
