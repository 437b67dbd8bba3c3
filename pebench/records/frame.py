"""The stored results as a frame: the sweep point of each result (its text, its :class:`~pebench.case.Point`), the
rows at a point, what one trained model's results share and which of them carries its learning curve. Pure functions
of rows already read (by :mod:`pebench.store.load`), for every layer that reads results above this one."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from pebench.case import Point

if TYPE_CHECKING:
    import pandas as pd


def point_column(df: pd.DataFrame) -> pd.Series:
    """The sweep point of each result of ``df`` as its text (its ``point`` column, :attr:`pebench.case.Case.point`;
    "" at none): the one way every reader gets a result's point to group or show by. A frame built without that
    column (by hand) has it from its ``axes``, and without either every row is at no point: no case id is parsed."""
    import pandas as pd

    if "point" in df.columns:
        return df["point"].fillna("").astype(str)
    if "axes" in df.columns:
        return points(df).map(str)
    return pd.Series("", index=df.index, dtype=str)


def points(df: pd.DataFrame) -> pd.Series:
    """The sweep point of each result of ``df`` as a :class:`pebench.case.Point`, from its ``axes`` column
    (``results.axes``; ``Point()`` at none, and for every row of a frame without that column): what a reader takes a
    point's values from (:func:`pebench.analysis.lr.rate_at`), never its text."""
    import pandas as pd

    if "axes" not in df.columns:
        return pd.Series([Point()] * len(df), index=df.index, dtype=object)
    return df["axes"].map(lambda a: Point.of_stored(a if isinstance(a, (list, tuple)) else None))


def at_point(df: pd.DataFrame, point: str) -> pd.DataFrame:
    """The results of ``df`` at sweep point ``point`` and those at no point (an encoding or task the sweep does not
    apply to is the same model at every point)."""
    return df[point_column(df).isin({"", point})]


MODEL_KEY = ("encoding", "task", "train_length", "seed", "config_hash")
"""What one trained model's results share (its lengths are its results)."""


def curve_owners(results: Iterable[Mapping[str, Any]]) -> dict[tuple[Any, ...], int]:
    """Per trained model (:data:`MODEL_KEY`), the id of the result that carries its learning curve: the one at the
    training length, else its first (the curve ``pebench merge --slim`` keeps and the page draws)."""
    owner: dict[tuple[Any, ...], int] = {}
    for r in sorted(results, key=lambda r: (r["eval_length"] != r["train_length"], r["id"])):
        owner.setdefault(tuple(r[k] for k in MODEL_KEY), int(r["id"]))
    return owner
