"""MAD compression, in the closest causal form: reproduce a random sequence after a compression token, each output
position read out by its index alone.

Source: Poli et al., "Mechanistic Design and Scaling of Hybrid Architectures", ICML 2024, arXiv:2403.17844 (section
3, "compression"; appendix B), reference code github.com/athms/mad-lab, ``mad/data/instances.py``
(``generate_compression_instance``; baseline ``configs/tasks/compression.yml``: ``vocab_size`` 16, ``seq_len`` 32)
and ``mad/model/auto_encoder.py`` (the model MAD trains on it).

MAD's task. ``seq_len - 1`` tokens i.i.d. uniform over ``0 .. V-2``, then a compression token ``V - 1``. An encoder
(the layers under test) reads the sequence; only its state at the last position (the compression token) is kept; a
fixed MLP decoder gets that one vector plus a sinusoidal embedding of output index ``i`` and must output token ``i``,
for every ``i`` (the compression token included). Accuracy over all ``seq_len`` outputs.

Why it cannot be made exactly here. The bottleneck is the point: every output must come from the one aggregation
vector. pebench trains one causal decoder for every task and a task can not change the model or its attention mask,
so a readout position can always attend back to the original tokens. A causal form therefore tests the decoder's half
of MAD's task (outputs addressed by position only), not the compression.

Definition (pebench). Vocabulary ``V + 1`` (option ``vocab_size`` = ``V``, default 16): data ``0 .. V-2``,
``COMP = V - 1``, ``BLANK = V``. The task length ``L`` is MAD's ``seq_len`` (the compressed sequence, its compression
token included); a sequence has ``2L - 1`` tokens:

    inputs  = x_1 .. x_{L-1}  COMP  BLANK x (L - 1)
    targets = IGNORE x L            x_1 .. x_{L-1}

The ``i``-th blank after ``COMP`` is scored with ``x_i``. Like MAD's decoder, a readout position carries nothing but
its position (a blank, no teacher forcing). This is MAD's plain (non-selective) copying task with no delay; the
answer sits a fixed ``L`` positions back, a distance that grows with the length. Training and evaluation (split
``test``) draw from the same distribution.

Defaults and departures from MAD:

* ``V = 16`` and training length 32: MAD's baseline (31 tokens to reproduce, 63 tokens per sequence); quick tier 32,
  64, 128 (63, 127, 255 tokens). MAD's harder settings use 64-256 and vocabularies up to 128.
* MAD also scores the compression token's own output (always ``V - 1``); here only ``x_1 .. x_{L-1}`` are scored.
* The ``BLANK`` token is new (MAD's decoder takes no token at all). Fresh batches instead of MAD's fixed 12,800
  sequences; pebench's default 600 steps (not measured for this task).

Chance level ``1 / (V - 1)`` (1/15): uniform over the data tokens.
"""

from __future__ import annotations

from typing import Any

import torch

from pebench.options import Option
from pebench.tasks.base import IGNORE, Batch
from pebench.tasks.mad_common import MadTask, train_length_option
from pebench.tasks.registry import register


@register
class MadCompression(MadTask):
    name = "mad_compression"
    version = "1"
    description = "MAD compression, causal form: L - 1 random tokens, COMP, then each read back by index alone"
    options = {
        "vocab_size": Option(16, "MAD's vocabulary V: V - 1 data tokens and COMP, plus BLANK (MAD baseline 16)",
                             type=int, low=3, high=100_000),
        "train_length": train_length_option(32, 2, "MAD's seq_len, 2T - 1 tokens; MAD's baseline: 32"),
    }  # fmt: skip

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        v = int(self.opts["vocab_size"])
        self.n_data, self.comp, self.blank = v - 1, v - 1, v
        self.check_train_length()

    @property
    def vocab_size(self) -> int:
        return self.n_data + 2

    @property
    def chance_level(self) -> float:
        return 1.0 / self.n_data

    def tokens(self, length: int) -> int:
        return 2 * length - 1

    def sample(self, batch_size: int, length: int, generator: torch.Generator, split: str = "train") -> Batch:
        self.check_length(length)
        self.check_split(split)
        x = torch.randint(0, self.n_data, (batch_size, length - 1), generator=generator)
        comp = torch.full((batch_size, 1), self.comp)
        inputs = torch.cat([x, comp, torch.full_like(x, self.blank)], dim=1)
        targets = torch.cat([torch.full((batch_size, length), IGNORE), x], dim=1)
        return Batch(inputs, targets)
