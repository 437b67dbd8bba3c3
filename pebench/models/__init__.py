"""The transformer that hosts any positional encoding."""

from pebench.models.transformer import ModelConfig, Transformer

__all__ = ["ModelConfig", "Transformer"]
