"""Modular running sum: predict the sum of every earlier token modulo ``m``.

Source: the seed study (a published interactive Streamlit comparison of positional encodings on four synthetic tasks,
which pebench's core tasks and default model come from). The task is the running (prefix) form of the modular-
arithmetic / parity family of length-generalisation probes (parity is the case ``m = 2``; cf. Delétang et al.,
"Neural Networks and the Chomsky Hierarchy", ICLR 2023, arXiv:2207.02098).

Definition. Tokens ``x_0 .. x_{T-1}`` are i.i.d. uniform over ``0 .. n_tokens - 1`` (default 20). The target at every
position ``t`` is the sum of all *previous* tokens,

    y_t = (x_0 + x_1 + ... + x_{t-1}) mod m,      m = modulus (default 10),

so ``y_0 = 0`` (the empty sum). Every position is scored. Example: inputs ``[3, 1, 4]`` -> targets ``[0, 3, 4]``.

Defaults (version 2): training length 8 and 1200 steps. At the seed study's length 32 no core encoding left chance
with 400 steps, nor RoPE with 1200 steps and 4 layers. At 8, three seeds (2026-11-24, one thread): RoPE learns it in
every seed, ALiBi and learned positions in two of three, NoPE in one and sinusoidal in none, with a seed-to-seed
spread that makes one seed's ranking unreliable (studies/task_defaults, "What the defaults learn (measured)"). The seed
study's setting is ``--task-options modular_sum:train_length=32 --steps 400``.

Chance level is ``1 / m`` (a predictor uniform over the ``m`` residues). The vocabulary is the ``n_tokens`` input
tokens; the residues ``0 .. m - 1`` reuse the first ``m`` of them, hence ``m <= n_tokens``.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from pebench.errors import OptionError
from pebench.options import Option
from pebench.tasks.base import Batch, Task
from pebench.tasks.registry import register


def running_sum_targets(inputs: Tensor, modulus: int) -> Tensor:
    """``y_t = (x_0 + ... + x_{t-1}) mod modulus`` along the last dimension (``y_0 = 0``)."""
    inclusive = torch.cumsum(inputs.remainder(modulus), dim=-1).remainder(modulus)
    exclusive = torch.zeros_like(inclusive)
    exclusive[..., 1:] = inclusive[..., :-1]
    return exclusive


@register
class ModularSum(Task):
    name = "modular_sum"
    version = "2"
    description = "predict the running sum of all earlier tokens modulo m (10), at every position (train length 8)"
    paper = "seed study (a published Streamlit comparison of PEs); cf. Delétang et al. 2023, arXiv:2207.02098"
    options = {
        "n_tokens": Option(20, "number of input tokens (the vocabulary)", type=int, low=2, high=100_000),
        "modulus": Option(10, "modulus m of the running sum (at most n_tokens)", type=int, low=2, high=100_000),
        "train_length": Option(8, "training length T (quick tier: T, 2T, 4T; the seed study's: 32)", type=int, low=2,
                               high=4096),
    }
    train_length = 8
    default_steps = 1200  # version 2: learnable at the defaults, see the module docstring
    min_length = 2

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.train_length = int(self.opts["train_length"])
        if self.opts["modulus"] > self.opts["n_tokens"]:
            raise OptionError(
                f"task {self.name}: option modulus={self.opts['modulus']} is out of range; "
                f"valid: int in [2, n_tokens={self.opts['n_tokens']}]"
            )

    @property
    def vocab_size(self) -> int:
        return int(self.opts["n_tokens"])

    @property
    def chance_level(self) -> float:
        return 1.0 / self.opts["modulus"]

    def sample(self, batch_size: int, length: int, generator: torch.Generator, split: str = "train") -> Batch:
        self.check_length(length)
        self.check_split(split)
        inputs = torch.randint(0, self.opts["n_tokens"], (batch_size, length), generator=generator)
        return Batch(inputs, running_sum_targets(inputs, self.opts["modulus"]))
