"""MAD in-context recall: a stream of key-value pairs over a small key set; recall each repeated key's value.

Source: Poli et al., "Mechanistic Design and Scaling of Hybrid Architectures", ICML 2024, arXiv:2403.17844 (section
3, "in-context recall"; appendix B), reference code github.com/athms/mad-lab, ``mad/data/instances.py``
(``generate_in_context_recall_instance`` with ``multi_query=True``, MAD's default and its baseline config
``configs/tasks/in-context-recall.yml``). The multi-query form of associative recall; unlike ``assoc_recall``
(Zoology's MQAR: distinct keys, then a separate query section) the key set is small and the keys repeat in one
stream, each repetition being a query.

Definition. Vocabulary ``V`` (option ``vocab_size``, default 16, MAD's baseline): keys ``0 .. V/2-1``, values
``V/2 .. V-1`` (``V//2`` keys, the rest values). The task length ``L`` (even) is the number of tokens, ``P = L/2``
pairs ``k_1 v_1 .. k_P v_P``. Each sequence draws one value per key, i.i.d. uniform over the values (the map changes
between sequences, is fixed within one). Keys ``k_1 .. k_{P-1}`` are i.i.d. uniform; ``k_P`` (the probe) is drawn
uniformly from the keys among ``k_1 .. k_{P-1}``, so every sequence has a scored position.

Scoring (evaluation split ``test``): at the position of ``k_j`` the target is ``v_j`` whenever ``k_j`` occurred in
an earlier pair, else IGNORE; every other position is IGNORE. Training (split ``train``) uses MAD's training
targets: the next token at every position (the language-modelling objective), IGNORE at the last one.

Defaults and departures from MAD:

* ``V = 16`` as MAD's baseline (8 keys, 8 values).
* Training length 64 (option ``train_length``; MAD's baseline is 128, its harder settings 256-1024): 32 pairs, each
  key about 4 times; the quick tier is 64, 128, 256. Since the key set is fixed, a longer sequence has more
  repetitions at about the same distance (a key recurs every ``V/2`` pairs on average): length generalisation here
  is reading unseen positions, not recalling over a longer gap.
* MAD's model reads the first ``2P - 1`` tokens (the probe's value is only a target); here the probe's value is also
  the last input, unscored, so that ``L = 2P``. Odd lengths are refused in one line.
* MAD trains on a fixed set of 12,800 sequences for 200 epochs with a learning-rate and weight-decay sweep; pebench
  draws fresh sequences and trains pebench's default steps (600, not measured for this task).

Chance level ``1 / (V - V//2)`` (1/8): uniform over the values. Values are shared between keys, so a guess that
ignores which key is asked, the most frequent value so far in the sequence, scores about 0.32 at lengths 64-256
(measured on 1,000 test sequences per length; tested): recall shows only above that.
"""

from __future__ import annotations

from typing import Any

import torch

from pebench.options import Option
from pebench.tasks.base import Batch
from pebench.tasks.mad_common import MadTask, recall_batch, train_length_option
from pebench.tasks.registry import register


@register
class MadRecall(MadTask):
    name = "mad_recall"
    version = "1"
    description = "MAD multi-query in-context recall: key-value pairs over 8 keys, recall each repeated key's value"
    options = {
        "vocab_size": Option(16, "vocabulary V: V//2 keys, the rest values (MAD baseline 16)", type=int, low=4,
                             high=10_000),
        "train_length": train_length_option(64, 4, "even; MAD's baseline: 128"),
    }  # fmt: skip
    even_lengths = True
    min_length = 4

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        v = int(self.opts["vocab_size"])
        self.n_keys, self.n_values = v // 2, v - v // 2
        self.check_train_length()

    @property
    def vocab_size(self) -> int:
        return self.n_keys + self.n_values

    @property
    def chance_level(self) -> float:
        return 1.0 / self.n_values

    def sample(self, batch_size: int, length: int, generator: torch.Generator, split: str = "train") -> Batch:
        self.check_length(length)
        self.check_split(split)
        return recall_batch(batch_size, length, generator, self.n_keys, self.n_values, lm_targets=split == "train")
