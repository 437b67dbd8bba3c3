"""Positional encodings. Each family lives in its own module; importing it registers it.

Adding an encoding: write ``pebench/encodings/<name>.py`` with a :class:`PositionalEncoding` subclass decorated with
:func:`register`, and add the module to the import list below (the registry entry).
"""

from pebench.encodings import (  # noqa: F401  (registry entries)
    abacus,
    alibi,
    cable,
    carope,
    cope,
    coupling,
    digits,
    drope,
    fire,
    fope,
    fox,
    hope,
    irope,
    kerple,
    learned,
    lrope,
    nope,
    partial_rope,
    path,
    pope,
    qknorm,
    randomized,
    rope,
    rope_nope,
    scaled_rope,
    selective,
    sininit,
    sinonly,
    sinusoidal,
    ssmax,
    stick_breaking,
    t5,
    tape,
    xpos,
)
from pebench.encodings.base import EncodingContext, PositionalEncoding
from pebench.encodings.registry import available, build, describe, get, not_applicable, register

__all__ = ["EncodingContext", "PositionalEncoding", "available", "build", "describe", "get", "not_applicable",
           "register"]
