"""Stable hashes of configurations and seeds derived from names."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys and no whitespace, so equal configs give equal strings."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def config_hash(obj: Any, length: int = 16) -> str:
    """First ``length`` hex digits of the SHA-256 of the canonical JSON of ``obj``."""
    return hashlib.sha256(canonical_json(obj).encode()).hexdigest()[:length]


def derive_seed(*parts: Any) -> int:
    """A 63-bit seed determined by ``parts`` (e.g. the run seed, "eval", the task, the length)."""
    digest = hashlib.sha256(canonical_json(list(parts)).encode()).digest()
    return int.from_bytes(digest[:8], "little") & ((1 << 63) - 1)
