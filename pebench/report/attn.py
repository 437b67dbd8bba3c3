"""The attention maps of the leaderboard: stored last-layer snapshots (:mod:`pebench.records.attention`) as PNG data
URIs, one per head and their mean, on one colour scale for the whole page (colour ∝ √p, magma from white to black,
so small probabilities stay visible), with its colour bar.

For the values on hover, each head's image carries its lower triangle (row-major, keys ``0..i`` of query ``i``) as
one byte per probability, ``round(255·√p)``, base64-encoded in ``data-p``: p is read back as ``(b/255)²``, to about
two significant digits (0.0002 near p = 0.001, 0.008 near 1 -- the snapshot itself holds thousandths). The mean's
image has no data of its own: the page's script averages the heads'. The token ids of the snapshot are in the
encoding's ``data-tokens``.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import numpy as np

from pebench.analysis.scoring import Group
from pebench.records import attention
from pebench.report.svg import FONT
from pebench.report.views import TaskView

LEVELS = 64
"""Colours of the scale (PNG palette entries; one more, white, for future positions)."""
CMAP = "magma_r"
TICKS = (0.0, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0)
"""The probabilities labelled on the colour bar."""


@lru_cache(maxsize=1)
def _lut() -> np.ndarray:
    import matplotlib as mpl

    return mpl.colormaps[CMAP].resampled(LEVELS)(np.arange(LEVELS))[:, :3]


@lru_cache(maxsize=1)
def _palette() -> list[int]:
    """The colour scale in LEVELS PNG palette entries, then white (future positions)."""
    return [int(round(255 * c)) for rgb in _lut() for c in rgb] + [255, 255, 255]


def level(p: np.ndarray | float) -> np.ndarray:
    """The colour level (0 .. LEVELS-1) of probability ``p``: ∝ √p."""
    return np.rint(np.sqrt(np.clip(np.nan_to_num(np.asarray(p, dtype=float)), 0.0, 1.0)) * (LEVELS - 1)).astype(int)


def png_data_uri(matrix: np.ndarray) -> str:
    """A PNG of an attention map on the page's colour scale; future positions white."""
    from PIL import Image

    idx = level(matrix).astype(np.uint8)
    idx[np.triu(np.ones(idx.shape, dtype=bool), k=1)] = LEVELS
    img = Image.fromarray(idx, mode="P")
    img.putpalette(_palette())
    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=True)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def packed(matrix: np.ndarray) -> str:
    """The lower triangle of ``matrix`` as base64 bytes ``round(255·√p)`` (see the module docstring)."""
    m = np.sqrt(np.clip(np.nan_to_num(np.asarray(matrix, dtype=float)), 0.0, 1.0))
    tri = m[np.tril_indices(m.shape[0])]
    return base64.b64encode(np.rint(tri * 255).astype(np.uint8).tobytes()).decode("ascii")


def unpacked(data: str, t: int) -> np.ndarray:
    """The inverse of :func:`packed` (the page's script does the same): a ``(t, t)`` matrix, zero above the
    diagonal."""
    values = (np.frombuffer(base64.b64decode(data), dtype=np.uint8) / 255.0) ** 2
    m = np.zeros((t, t))
    m[np.tril_indices(t)] = values
    return m


def colour_bar(width: float = 300) -> str:
    """The SVG colour bar of the scale: √p from 0 to 1, labelled in p."""
    from matplotlib.colors import to_hex

    body = []
    step = width / LEVELS
    for k, rgb in enumerate(_lut()):
        body.append(f'<rect x="{10 + k * step:.1f}" y="4" width="{step + 0.4:.1f}" height="12" fill="{to_hex(rgb)}"/>')
    for p in TICKS:
        x = 10 + float(np.sqrt(p)) * width
        body.append(f'<line x1="{x:.1f}" y1="16" x2="{x:.1f}" y2="20" stroke="#475467"/>')
        body.append(f'<text x="{x:.1f}" y="31" text-anchor="middle">{p:g}</text>')
    body.append(f'<text x="{width + 22:.1f}" y="14">attention probability p (colour ∝ √p)</text>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="colour scale of the attention maps" '
            f'viewBox="0 0 {width + 260:.0f} 36" width="{width + 260:.0f}" height="36" font-family="{FONT}" '
            f'font-size="10.5" fill="#1d2330">' + "".join(body) + "</svg>")  # fmt: skip


def attention_maps(view: TaskView, groups: Mapping[str, Group]) -> None:
    """Per encoding: the stored last-layer maps (lowest seed with maps at the training length), one image per head
    and their mean."""
    for row in view.rows:
        chosen = _snapshot(groups[row.encoding], view.train_length)
        if chosen is None:
            continue
        seed, att = chosen
        heads = attention.decode(att)
        if not heads:
            continue
        images = [{"label": f"head {i}", "src": png_data_uri(h), "p": packed(h)} for i, h in enumerate(heads)]
        images.append({"label": "mean", "src": png_data_uri(np.mean(heads, axis=0)), "p": ""})
        tokens = [int(t) for t in (att.get("tokens") or [])][: len(heads[0])]
        view.attention.append({
            "encoding": row.encoding, "color": row.color, "seed": seed, "layer": att.get("layer"),
            "tokens": len(heads[0]), "token_ids": " ".join(map(str, tokens)), "images": images,
        })  # fmt: skip


def _snapshot(g: Group, train_length: int) -> tuple[int, Mapping[str, Any]] | None:
    for L in sorted(g.by_length, key=lambda x: (x != train_length, x)):
        for seed in sorted(g.by_length[L]):
            att = (g.by_length[L][seed].get("metrics") or {}).get("attention")
            if att and att.get("heads"):
                return seed, att
    return None
