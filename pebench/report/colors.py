"""Colours of the leaderboard: one per encoding (the same on every plot), and a colormap for scores in [0, 1].

Encodings are coloured in family order (:func:`pebench.report.families.ordered`): the i-th built-in encoding gets
``PALETTE[i]`` on every page, whichever encodings the page shows, so a name keeps its colour from page to page;
another (a plugin's) gets a palette entry no built-in takes, chosen by a hash of its name. The palette is 6 rounds
of 8 hue columns (strong, dark, shifted, then three times for each column the colour farthest in RGB from all
earlier entries that still meets the contrast; the fifth round searched a 3-step RGB grid, the sixth an 18-step
one, within 25° of the column's hue, HSV saturation 0.45-0.85 and value 0.4-0.9, with contrast >= 3.05, so no pure
primaries), so any 8 consecutive entries -- the members of one family, which share a small chart -- have 8
different columns (a family of more than 8, rotary with 12, repeats a column only 8 entries apart, where the marker
differs). Every colour has a contrast ratio of at least :data:`MIN_CONTRAST` against the white page (WCAG 2
relative luminance; tested), so no line or label is pale; beyond the palette, evenly spaced hues are darkened until
they meet it too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

MIN_CONTRAST = 3.0
"""The least contrast ratio of an encoding's colour against white (WCAG 2's minimum for graphics)."""

PALETTE = (
    "#1f77b4", "#d45500", "#2e8b2e", "#d62728", "#8e5fc0", "#8c564b", "#c2187a", "#00838f",  # strong
    "#0b3c73", "#8a4600", "#1b5e20", "#8b1a1a", "#4a148c", "#5a3d2b", "#880e4f", "#00524a",  # dark
    "#4f6bd8", "#b06a00", "#5f8a00", "#e0445a", "#a03ad0", "#7a6a55", "#d04aa0", "#3a7d6e",  # shifted
    "#162bd9", "#bf8169", "#64993d", "#cc7233", "#eb18f2", "#b22d4e", "#87388c", "#5b97a6",  # farthest from the rest
    "#3c4e93", "#96812a", "#1ea857", "#ae5175", "#5d24e4", "#ae4824", "#e45ae1", "#2a99e4",  # farthest, again
    "#2d9696", "#785a1e", "#4ba569", "#e16978", "#b478e1", "#b45a4b", "#c31eb4", "#5a96d2",  # and a third time
)  # fmt: skip


def _linear(channel: float) -> float:
    return channel / 12.92 if channel <= 0.04045 else ((channel + 0.055) / 1.055) ** 2.4


def luminance(hex_: str) -> float:
    """WCAG 2 relative luminance of ``#rrggbb``."""
    r, g, b = (_linear(int(hex_[i : i + 2], 16) / 255) for i in (1, 3, 5))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(hex_: str, background: str = "#ffffff") -> float:
    """WCAG 2 contrast ratio of two colours (1 to 21)."""
    a, b = sorted((luminance(hex_), luminance(background)), reverse=True)
    return (a + 0.05) / (b + 0.05)


def _extra(i: int, n: int) -> str:
    """The i-th of n evenly spaced hues, darkened until it has :data:`MIN_CONTRAST` against white."""
    from matplotlib.colors import hsv_to_rgb, to_hex

    value = 0.85
    while True:
        c = to_hex(hsv_to_rgb((i / n, 0.8, value)))
        if contrast(c) >= MIN_CONTRAST + 0.2:
            return c
        value -= 0.05


@lru_cache(maxsize=1)
def _built_in_order() -> tuple[str, ...]:
    """Every built-in encoding in family order: the i-th keeps ``PALETTE[i]`` on every page."""
    from pebench import encodings
    from pebench.encodings.registry import ENCODINGS
    from pebench.registry import BUILT_IN
    from pebench.report.families import ordered

    return tuple(ordered(n for n in encodings.available() if ENCODINGS.source(n) == BUILT_IN))


def _stable_index(name: str, n: int) -> int:
    return int(hashlib.sha256(name.encode()).hexdigest()[:8], 16) % n


def encoding_colors(ordered: Sequence[str]) -> dict[str, str]:
    """One colour per encoding of ``ordered`` (names in family order, :func:`pebench.report.families.ordered`), the
    same for a name on every page: a built-in encoding has its family-order entry of the palette
    (:func:`_built_in_order`); another (a plugin's) one of the palette's entries no built-in takes, picked by a hash of
    its name (the next free one when taken on the page), and beyond those, darkened evenly spaced hues."""
    fixed = {n: PALETTE[i] for i, n in enumerate(_built_in_order()) if i < len(PALETTE)}
    out = {n: fixed[n] for n in ordered if n in fixed}
    others = [n for n in ordered if n not in fixed]
    free = [c for c in PALETTE if c not in fixed.values()]
    taken: set[str] = set()
    for k, name in enumerate(others):
        if len(taken) == len(free):
            out[name] = _extra(k, len(others))
            continue
        i = _stable_index(name, len(free))
        while free[i] in taken:  # its own entry, else the next free one
            i = (i + 1) % len(free)
        out[name] = free[i]
        taken.add(free[i])
    return {n: out[n] for n in ordered}


@lru_cache(maxsize=4)
def _lut(cmap: str) -> np.ndarray:
    import matplotlib as mpl

    return mpl.colormaps[cmap].resampled(256)(np.arange(256))[:, :3]


def cmap_hex(value: float | None, cmap: str = "viridis") -> tuple[str, str]:
    """Background and readable text colour of ``value`` in [0, 1] (light grey for missing)."""
    if value is None:
        return "#eeeeee", "#777777"
    r, g, b = _lut(cmap)[int(round(min(1.0, max(0.0, value)) * 255))]
    luminance = 0.299 * r + 0.587 * g + 0.114 * b
    hex_ = "#{:02x}{:02x}{:02x}".format(*(int(round(255 * c)) for c in (r, g, b)))
    return hex_, "#000000" if luminance > 0.5 else "#ffffff"
