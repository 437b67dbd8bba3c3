"""The transformer's sizes (:class:`ModelConfig`), apart from the model itself so that reading or declaring them (the
command line's flags, :mod:`pebench.engine.settings`) needs no torch."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from pebench.errors import ConfigError
from pebench.options import flag


@dataclass(frozen=True)
class ModelConfig:
    """Sizes of the transformer. ``ffn_hidden`` 0 means LLaMA's rule: 2/3 of 4·d rounded up to a multiple of 32.

    ``scale_embeddings``: when the encoding adds a position vector to the token embeddings (its ``embed`` hook
    returns one), the token embeddings (initialised N(0, 0.02²)) are first multiplied by √d_model, as Vaswani et al.
    2017 (§3.4) do, so tokens and positions start at comparable sizes (a fixed absolute encoding's entries of size
    ~1 are ~50x the token signal at d_model 128). Encodings that add no vector are left unscaled (measurements:
    docs/defaults.md, "Token embedding scale (scale_embeddings)"), and so are those with ``needs``, whose vector comes
    from the task's annotations (Abacus, position coupling). Part of the config, so results with and without it are
    never mixed.
    """

    vocab_size: int
    d_model: int = field(default=128, metadata=flag("model width", scopes=("sizes",)))
    n_layers: int = 2
    n_heads: int = field(default=4, metadata=flag("attention heads", name="heads", scopes=("sizes",)))
    dropout: float = 0.0
    ffn_hidden: int = 0
    norm_eps: float = 1e-5
    scale_embeddings: bool = True

    def __post_init__(self) -> None:
        for name in ("vocab_size", "d_model", "n_layers", "n_heads"):
            if getattr(self, name) <= 0:
                raise ConfigError("model", f"{{{name}}} must be positive, got {getattr(self, name)}")
        if self.d_model % self.n_heads:
            d, h = self.d_model, self.n_heads
            raise ConfigError("model", f"{{d_model}} ({d}) must be divisible by {{n_heads}} ({h})")
        if self.ffn_hidden < 0:
            raise ConfigError("model", f"{{ffn_hidden}} must be positive (or 0: LLaMA's rule), got {self.ffn_hidden}")
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError("model", f"{{dropout}} must be in [0, 1), got {self.dropout}")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @property
    def hidden(self) -> int:
        if self.ffn_hidden:
            return self.ffn_hidden
        return 32 * math.ceil(int(8 * self.d_model / 3) / 32)

    def to_dict(self) -> dict:
        return asdict(self)
