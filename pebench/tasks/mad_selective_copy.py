"""MAD selective copying: copy the data tokens scattered among blanks, in order, after a copy token.

Source: Poli et al., "Mechanistic Design and Scaling of Hybrid Architectures", ICML 2024, arXiv:2403.17844 (section
3, "selective copying"; appendix B), reference code github.com/athms/mad-lab, ``mad/data/instances.py``
(``generate_selective_copying_instance``, i.e. ``generate_copying_instance(selective=True)``; baseline
``configs/tasks/selective-copying.yml``: ``vocab_size`` 16, ``seq_len`` 256, ``num_tokens_to_copy`` 16); the task of
Gu & Dao, "Mamba", 2023, arXiv:2312.00752.

Definition. Vocabulary ``V`` (option ``vocab_size``, default 16): data tokens ``0 .. V-3``, ``BLANK = V - 2``,
``COPY = V - 1``. The task length ``L`` is the number of tokens; ``n`` (option ``n_copy``) data tokens i.i.d.
uniform, and ``b = L - 2n - 1`` blanks. Each blank is placed, independently and uniformly, right before one of the
``n`` data tokens (MAD's ``np.insert`` at indices ``0 .. n-1``), so the data keep their order and the last one is
right before ``COPY``. Then ``COPY`` and ``n`` more blanks:

    inputs  = [data and b blanks]  COPY  BLANK x n
    targets = IGNORE x (L - n)            d_1 .. d_n

The ``i``-th blank after ``COPY`` is scored with the ``i``-th data token. Its input is a blank, not the previous data
token (no teacher forcing, as in MAD): the model must know which output it is at from positions alone. Training and
evaluation (split ``test``) draw from the same distribution.

Defaults and departures from MAD:

* ``V = 16`` as MAD's baseline (14 data tokens).
* Training length 64 (option ``train_length``) with ``n = 8`` (MAD's baseline: 256 tokens with 16 to copy, 223
  blanks; its harder settings copy 32-96 or read up to 1024). At 64, 8 data tokens among 47 blanks keep blanks the
  large majority of the region (85%, MAD's 93%). ``n`` stays fixed at longer lengths: the quick tier 64, 128, 256
  spreads the same 8 data tokens over more blanks. Shortest length ``2n + 2`` (one blank, MAD's bound).
* MAD draws the blanks' places from numpy's global generator (not its seeded one); here every draw comes from the
  batch's generator. Fresh batches instead of MAD's fixed 12,800 sequences; pebench's default 600 steps (not
  measured for this task).

Chance level ``1 / (V - 2)`` (1/14): uniform over the data tokens.
"""

from __future__ import annotations

from typing import Any

import torch

from pebench.options import Option
from pebench.tasks.base import IGNORE, Batch
from pebench.tasks.mad_common import MadTask, train_length_option
from pebench.tasks.registry import register


@register
class MadSelectiveCopy(MadTask):
    name = "mad_selective_copy"
    version = "1"
    description = "MAD selective copying: copy 8 data tokens scattered among blanks, in order, after COPY"
    options = {
        "vocab_size": Option(16, "vocabulary V: V - 2 data tokens, BLANK, COPY (MAD baseline 16)", type=int, low=3,
                             high=100_000),
        "n_copy": Option(8, "data tokens n to copy (MAD baseline 16 at length 256)", type=int, low=1, high=1000),
        "train_length": train_length_option(64, 4, ">= 2 n_copy + 2; MAD's baseline: 256"),
    }  # fmt: skip

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        v = int(self.opts["vocab_size"])
        self.n_data, self.blank, self.copy = v - 2, v - 2, v - 1
        self.n = int(self.opts["n_copy"])
        self.min_length = 2 * self.n + 2
        self.check_train_length()

    @property
    def vocab_size(self) -> int:
        return self.n_data + 2

    @property
    def chance_level(self) -> float:
        return 1.0 / self.n_data

    def sample(self, batch_size: int, length: int, generator: torch.Generator, split: str = "train") -> Batch:
        self.check_length(length)
        self.check_split(split)
        bsz, n = batch_size, self.n
        blanks = length - 2 * n - 1
        data = torch.randint(0, self.n_data, (bsz, n), generator=generator)
        before = torch.randint(0, n, (bsz, blanks), generator=generator)  # the data token each blank precedes
        # order the region by (data index, blanks before their data token): data i at 2i + 1, its blanks at 2i
        order = torch.cat([2 * torch.arange(n).expand(bsz, n) + 1, 2 * before], dim=1).argsort(dim=1, stable=True)
        region = torch.cat([data, torch.full((bsz, blanks), self.blank)], dim=1).gather(1, order)
        inputs = torch.cat([region, torch.full((bsz, 1), self.copy), torch.full((bsz, n), self.blank)], dim=1)
        targets = torch.cat([torch.full((bsz, length - n), IGNORE), data], dim=1)
        return Batch(inputs, targets)
