"""The transformer that hosts any positional encoding.

:class:`ModelConfig` (:mod:`pebench.models.config`) is importable without torch; :class:`Transformer`
(:mod:`pebench.models.transformer`) is imported on first use, so that reading the model's sizes -- the command line's
flags -- does not load torch."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pebench.models.config import ModelConfig

if TYPE_CHECKING:
    from pebench.models.transformer import Transformer

__all__ = ["ModelConfig", "Transformer"]


def __getattr__(name: str) -> Any:
    if name == "Transformer":
        from pebench.models.transformer import Transformer

        return Transformer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
