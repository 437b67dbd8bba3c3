"""Long-range match: does the last token equal the first?

Source: the seed study (a published interactive Streamlit comparison of positional encodings on four synthetic tasks,
which pebench's core tasks and default model come from) (a binary probe of attention across the whole sequence: the
evidence sits at the two ends, as far apart as the length allows).

Definition. Content tokens are ``0 .. 49``; the answers are ``NO = 50`` and ``YES = 51`` (vocabulary 52). A sequence
``x_0 .. x_{T-1}`` has every token i.i.d. uniform over the content tokens except the last: a per-sample fair coin
(Bernoulli(0.5)) decides whether ``x_{T-1} = x_0`` (label YES) or ``x_{T-1}`` is uniform over the 49 content tokens
``!= x_0`` (label NO). Only the last position is scored:

    y_{T-1} = YES if x_{T-1} == x_0 else NO,      y_t = IGNORE for t < T - 1.

Chance level is 0.5. The shortest sequence is 2 tokens (first and last distinct positions).
"""

from __future__ import annotations

import torch

from pebench.tasks.base import IGNORE, Batch, Task
from pebench.tasks.registry import register

N_CONTENT = 50
NO = N_CONTENT
YES = N_CONTENT + 1


@register
class LongRangeMatch(Task):
    name = "long_range_match"
    version = "1"
    description = "answer YES/NO at the last position: is the last token equal to the first?"
    paper = "seed study (a published Streamlit comparison of PEs)"
    train_length = 32
    default_steps = 400  # tuned: see README 'Default configuration'
    min_length = 2

    @property
    def vocab_size(self) -> int:
        return N_CONTENT + 2

    @property
    def chance_level(self) -> float:
        return 0.5

    def sample(self, batch_size: int, length: int, generator: torch.Generator, split: str = "train") -> Batch:
        self.check_length(length)
        self.check_split(split)
        inputs = torch.randint(0, N_CONTENT, (batch_size, length), generator=generator)
        match = torch.randint(0, 2, (batch_size,), generator=generator).bool()
        first = inputs[:, 0]
        # uniform over the N_CONTENT - 1 tokens != first: draw from 0..N_CONTENT-2 and skip over `first`
        other = torch.randint(0, N_CONTENT - 1, (batch_size,), generator=generator)
        other = other + (other >= first).long()
        inputs[:, -1] = torch.where(match, first, other)
        targets = torch.full_like(inputs, IGNORE)
        targets[:, -1] = torch.where(match, YES, NO)
        return Batch(inputs, targets)
