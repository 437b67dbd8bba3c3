"""pebench: a pytest-native benchmark suite for positional encodings in small transformers."""

__version__ = "0.1.0"
