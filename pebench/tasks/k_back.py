"""k-back recall: at every position, output the token seen ``k`` positions earlier.

Source: the seed study (a published interactive Streamlit comparison of positional encodings on four synthetic tasks,
which pebench's core tasks and default model come from). It is the standard positional retrieval/copy probe (the
behaviour of the "previous-token" heads that feed induction heads; cf. Olsson et al., "In-context Learning and
Induction Heads", 2022, arXiv:2209.11895): the answer is fixed by a relative offset alone, never by content.

Definition. Tokens ``x_0 .. x_{T-1}`` are i.i.d. uniform over ``0 .. 49`` (vocabulary 50). With ``k`` the option
(default 3, ``k >= 1``), the target is

    y_t = x_{t-k}    for t >= k,
    y_t = IGNORE     for t <  k   (nothing to recall yet).

Chance level is ``1 / 50``. The shortest sequence with a scored position has ``k + 1`` tokens.
"""

from __future__ import annotations

from typing import Any

import torch

from pebench.options import Option
from pebench.tasks.base import IGNORE, Batch, Task
from pebench.tasks.registry import register

N_TOKENS = 50


@register
class KBack(Task):
    name = "k_back"
    version = "1"
    description = "at every position t >= k, recall the token k (3) positions back"
    paper = "seed study (a published Streamlit comparison of PEs); cf. Olsson et al. 2022, arXiv:2209.11895"
    options = {"k": Option(3, "how many positions back to recall", type=int, low=1, high=4096)}
    train_length = 64
    default_steps = 200  # tuned: see README 'Default configuration'

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.min_length = self.opts["k"] + 1

    @property
    def vocab_size(self) -> int:
        return N_TOKENS

    @property
    def chance_level(self) -> float:
        return 1.0 / N_TOKENS

    def sample(self, batch_size: int, length: int, generator: torch.Generator, split: str = "train") -> Batch:
        self.check_length(length)
        self.check_split(split)
        k = self.opts["k"]
        inputs = torch.randint(0, N_TOKENS, (batch_size, length), generator=generator)
        targets = torch.full_like(inputs, IGNORE)
        targets[:, k:] = inputs[:, :-k]
        return Batch(inputs, targets)
