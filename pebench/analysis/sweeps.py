"""Results of a sweep (``--sweep``, :mod:`pebench.engine.sweep`) are ranked one point at a time: each point is its
own configuration, and a table, a page or a finding that put two points side by side as if they were one would
compare a model with a variant of itself. The rows of a point are its own and those at no point (an encoding or task
the sweep does not apply to is the same model at every point)."""

from __future__ import annotations

import pandas as pd

from pebench.case import point_of
from pebench.errors import PebenchError


class PointError(PebenchError):
    """Results of several sweep points where one is needed, or a point that is not there."""


def points(df: pd.DataFrame) -> list[str]:
    """The sweep points of the results ``df`` (by their case ids), sorted; ``[]`` without a sweep."""
    return sorted({p for p in df["case_id"].map(point_of) if p}) if not df.empty else []


def one_point(df: pd.DataFrame, point: str | None) -> pd.DataFrame:
    """The rows of sweep point ``point`` (its id part, e.g. ``layers4``) and those at no point. Without ``point``:
    ``df`` when it holds at most one point, else a one-line error naming them."""
    found = points(df)
    if point is None:
        if len(found) > 1:
            raise PointError(f"the selected results hold {len(found)} sweep points ({', '.join(found)}); they are "
                             "ranked one at a time: give --point POINT")  # fmt: skip
        return df
    if point not in found:
        raise PointError(f"--point {point!r} is not among the selected results' sweep points: "
                         f"{', '.join(found) or 'none'}")  # fmt: skip
    return df[df["case_id"].map(point_of).isin({"", point})]
