"""How a context-extension method continues a trained model (issue 88): the declaration an encoding class makes when
it is a way of extending another encoding's trained model rather than an encoding trained on its own.

Position Interpolation, NTK, YaRN, Llama 3's scaling and LongRoPE are applied to a trained RoPE model with a short
fine-tune at the longer length (Chen et al. 2023, arXiv:2306.15595; Peng et al. 2023, arXiv:2309.00071; the
controlled comparison of Lu et al. 2024, arXiv:2409.12181). Such a class declares ``extension``: the encoding whose
trained model it starts from and the options it takes from the fine-tune on, the factor among them. The engine's
second phase (:mod:`pebench.engine.extension`) reads the declaration; the model never does, and an encoding without
one is fine-tuned unchanged (a control).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Extension:
    """A method that extends ``base``'s trained model: from the fine-tune on it runs with ``options`` and its option
    ``factor`` set to the extension factor F (the scale s of its formula)."""

    base: str
    """The encoding whose trained model the method continues (its options: those of the method's own options that
    the base declares)."""
    factor: str
    """The option that receives F."""
    options: Mapping[str, Any] = field(default_factory=dict)
    """Further options from the fine-tune on (a scaled RoPE's ``mode="train"``: the fixed factor, not the
    length-dependent one of its zero-shot mode)."""

    def phase_options(self, given: Mapping[str, Any], factor: float) -> dict[str, Any]:
        """The method's options in the second phase: ``given`` with :attr:`options` and the factor."""
        return {**given, **self.options, self.factor: float(factor)}
