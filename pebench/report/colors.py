"""Colours of the leaderboard: one per encoding (the same on every plot), and a colormap for scores in [0, 1]."""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

import numpy as np


def encoding_colors(names: Iterable[str]) -> dict[str, str]:
    """One colour per encoding (sorted names -> tab10, tab20, then evenly spaced hues), the same in every plot."""
    import matplotlib as mpl
    from matplotlib.colors import hsv_to_rgb, to_hex

    ordered = sorted(set(names))
    n = len(ordered)
    if n <= 10:
        colors = [to_hex(c) for c in mpl.colormaps["tab10"].colors[:n]]
    elif n <= 20:  # tab10, then the darker tones of tab20b and tab20c (the light tab20 tones read badly as text)
        extra = [mpl.colormaps["tab20b"].colors[i] for i in (0, 4, 8, 12, 16)]
        extra += [mpl.colormaps["tab20c"].colors[i] for i in (0, 4, 8, 12, 16)]
        colors = [to_hex(c) for c in (list(mpl.colormaps["tab10"].colors) + extra)[:n]]
    else:
        colors = [to_hex(hsv_to_rgb((i / n, 0.65, 0.8 if i % 2 else 0.62))) for i in range(n)]
    return dict(zip(ordered, colors, strict=True))


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
