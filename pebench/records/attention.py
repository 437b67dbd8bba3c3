"""The stored attention snapshot: its encoder (used by the runner) and its decoder (used by the report), side by side.

A snapshot holds the last layer's attention probabilities on the first tokens of one evaluation sequence, in a
compact JSON form kept in a result's ``metrics["attention"]``::

    {"layer": int, "tokens": [token ids], "scale": 1000, "heads": heads}

where ``heads[h][i]`` lists ``round(scale * p)`` for the keys ``0..i`` of query ``i`` (the causal lower triangle).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

SCALE = 1000


def encode(maps: Any, layer: int, tokens: Sequence[int], scale: int = SCALE) -> dict[str, Any]:
    """The snapshot of ``maps``, an ``(H, t, t)`` array of attention probabilities (numpy or torch, on the CPU)."""
    quantised = np.rint(np.asarray(maps, dtype=np.float32) * np.float32(scale)).astype(np.int64)
    return {
        "layer": int(layer),
        "tokens": [int(t) for t in tokens],
        "scale": scale,
        "heads": [[row[: i + 1] for i, row in enumerate(head)] for head in quantised.tolist()],
    }


def decode(snapshot: Mapping[str, Any]) -> list[np.ndarray]:
    """The per-head ``(t, t)`` probability matrices of a snapshot (zero above the diagonal)."""
    scale = float(snapshot.get("scale") or 1.0)
    out = []
    for head in snapshot.get("heads") or []:
        t = len(head)
        m = np.zeros((t, t))
        for i, row in enumerate(head):
            m[i, : len(row)] = np.asarray(row[:t], dtype=float) / scale
        out.append(m)
    return out
