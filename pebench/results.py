"""``pebench.results.load(db_url, run=None)``: results as a pandas DataFrame (see :func:`pebench.store.load.load`)."""

from pebench.store.load import load

__all__ = ["load"]
