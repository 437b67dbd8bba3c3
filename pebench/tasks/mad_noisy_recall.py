"""MAD noisy in-context recall: ``mad_recall`` with pairs of noise tokens from their own vocabulary in between.

Source: Poli et al., "Mechanistic Design and Scaling of Hybrid Architectures", ICML 2024, arXiv:2403.17844 (section
3, "noisy in-context recall"; appendix B), reference code github.com/athms/mad-lab, ``mad/data/instances.py``
(``generate_noisy_in_context_recall_instance``, which is ``generate_in_context_recall_instance`` with noise; baseline
``configs/tasks/noisy-in-context-recall.yml``: ``vocab_size`` 32, ``noise_vocab_size`` 16, ``frac_noise`` 0.2,
``multi_query``). The model must ignore tokens it learns, in training, to be irrelevant.

Definition. Vocabulary ``V`` (option ``vocab_size``, default 32) of which the last ``N`` (``noise_vocab_size``,
default 16) are noise tokens; the other ``V - N`` split into keys ``0 .. (V-N)//2 - 1`` and values up to
``V - N - 1``. The task length ``L`` (even) is the number of tokens, ``P = L/2`` two-token slots. Each of the slots
``1 .. P-1`` is, with probability ``f`` (``frac_noise``, default 0.2), two i.i.d. uniform noise tokens, and
otherwise a uniform key followed by its value; one uniformly drawn slot among them is always a pair. Values: one per
key per sequence, i.i.d. uniform over the values. Slot ``P`` is the probe: a key drawn uniformly from the keys of the
earlier pairs, and its value.

Scoring (evaluation split ``test``): at the position of a pair's key the target is its value whenever that key
occurred in an earlier pair (never counting noise), else IGNORE; noise is never scored. Training (split ``train``):
MAD's training targets, the next token at every position (noise included), IGNORE at the last one.

Defaults and departures from MAD:

* ``V = 32``, ``N = 16``, ``f = 0.2``: MAD's baseline (8 keys, 8 values, 16 noise tokens); MAD's harder settings
  raise ``f`` to 0.4-0.8.
* Version 2: training length 32 (option ``train_length``; MAD's baseline 128, version 1 64), quick tier 32, 64, 128,
  and 2400 training steps (``default_steps``; version 1 pebench's global 600). At version 1's 64 tokens and 600 steps
  no core encoding left the floor below in 3 seeds (0.19-0.36); at 64 tokens with 2400 steps learned positions
  stayed flat at it (0.33) and RoPE rose slowly to 0.61; at 32 tokens with 2400 steps RoPE's loss dropped at about
  step 1,100 and it scored 1.00 at 32, 0.98 at 64 and 0.89 at 128 (one seed each, 2026-11-25; docs/tasks.md).
  MAD itself trains for 200 epochs of 12,800 sequences, about 40,000 steps of 64.
* MAD draws its always-a-pair slot from all ``P`` slots, including the probe's, which then guarantees nothing (and
  with every earlier slot noise its probe draw fails); here it is drawn from slots ``1 .. P-1``.
* As in ``mad_recall``: the probe's value is the last input (unscored), so ``L = 2P``; fresh batches instead of
  MAD's fixed 12,800 sequences.

Chance level ``1 / ((V - N) - (V - N)//2)`` (1/8): uniform over the values. As in ``mad_recall``, the most frequent
value so far, a guess that ignores the key, scores well above it: 0.38 at length 32, 0.34 at 64, 0.32 at 128 and 256
(1,000 test sequences per length; tested).
"""

from __future__ import annotations

from typing import Any

import torch

from pebench.errors import OptionError
from pebench.options import Option
from pebench.tasks.base import Batch
from pebench.tasks.mad_common import MadTask, recall_batch, train_length_option
from pebench.tasks.registry import register


@register
class MadNoisyRecall(MadTask):
    name = "mad_noisy_recall"
    version = "2"
    default_steps = 2400  # version 2: see the module docstring
    description = "MAD noisy in-context recall: mad_recall with 20% of the slots noise from 16 other tokens"
    options = {
        "vocab_size": Option(32, "vocabulary V, noise tokens included (MAD baseline 32)", type=int, low=5,
                             high=10_000),
        "noise_vocab_size": Option(16, "noise tokens N, the last N of the vocabulary (V - N >= 4)", type=int, low=1,
                                   high=10_000),
        "frac_noise": Option(0.2, "probability f that a slot is noise (MAD baseline 0.2)", float, low=0.0,
                             high=1.0, high_open=True),
        "train_length": train_length_option(32, 4, "even; MAD's baseline: 128; version 1: 64"),
    }  # fmt: skip
    even_lengths = True
    min_length = 4

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        v, n = int(self.opts["vocab_size"]), int(self.opts["noise_vocab_size"])
        if v - n < 4:
            raise OptionError(f"task {self.name}: option noise_vocab_size={n} leaves {v - n} key and value tokens "
                              f"of vocab_size={v}; valid: noise_vocab_size <= vocab_size - 4 = {v - 4}")  # fmt: skip
        self.n_keys = (v - n) // 2
        self.n_values = v - n - self.n_keys
        self.n_noise, self.frac = n, float(self.opts["frac_noise"])
        self.check_train_length()

    @property
    def vocab_size(self) -> int:
        return self.n_keys + self.n_values + self.n_noise

    @property
    def chance_level(self) -> float:
        return 1.0 / self.n_values

    def sample(self, batch_size: int, length: int, generator: torch.Generator, split: str = "train") -> Batch:
        self.check_length(length)
        self.check_split(split)
        return recall_batch(batch_size, length, generator, self.n_keys, self.n_values, self.frac,
                            self.n_keys + self.n_values, self.n_noise, lm_targets=split == "train")  # fmt: skip
