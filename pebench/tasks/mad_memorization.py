"""MAD memorization: a fixed key -> value map, the same in every sequence, learned in the weights.

Source: Poli et al., "Mechanistic Design and Scaling of Hybrid Architectures", ICML 2024, arXiv:2403.17844 (section
3, "memorization"; appendix B), reference code github.com/athms/mad-lab, ``mad/data/instances.py``
(``generate_kv_map``, ``generate_memorization_instance``; baseline ``configs/tasks/memorization.yml``:
``vocab_size`` 256, ``seq_len`` 32; the map's seed is ``MADConfig.seed``, 12345). Unlike the recall tasks nothing in
the context helps: the map never changes, so it must be stored in the weights (MAD's stand-in for factual knowledge).

Definition. Vocabulary ``V`` (option ``vocab_size``, default 256): ``K = (V-1)//2`` keys ``0 .. K-1``, value tokens
``K .. V-2``, ``INSERT = V - 1``. The map sends the keys one-to-one to ``K`` of the value tokens: with
``g = torch.Generator().manual_seed(map_seed)`` (option, default 12345, MAD's seed), key ``k`` maps to
``K + torch.randperm(V - 1 - K, generator=g)[k]``; it depends on ``V`` and ``map_seed`` only, never on a batch. The
task length ``L`` (even) is the number of tokens: ``L/2`` keys i.i.d. uniform, each followed by ``INSERT``:

    inputs  = k_1 INSERT k_2 INSERT .. k_{L/2} INSERT

Option ``answer_at`` says where the value ``map(k_j)`` is scored; every other position is IGNORE:

* ``key`` (default): at ``k_j``'s own position. The answer is a function of the current token alone, so position
  can not help: the task is a negative control, on which every encoding should tie at the training length (a drop
  at longer lengths measures how much an encoding disturbs a computation that needs no position).
* ``insert``: at the ``INSERT`` after ``k_j``, MAD's layout (its targets are not shifted: the value is the output at
  ``INSERT``). This needs a look-back of one token, which an encoding without positions can not single out among the
  earlier keys directly, so it is not position-free.

Training and evaluation (split ``test``) draw from the same distribution.

Defaults and departures from MAD:

* ``V = 256`` (127 keys, 127 of 128 value tokens used) and training length 32 (16 keys per sequence): MAD's baseline;
  quick tier 32, 64, 128. MAD's harder settings grow ``V`` to 8192.
* The map has MAD's distribution (a uniformly random one-to-one map from the keys into the value tokens) but not MAD's
  exact pairs, which come from numpy's generator.
* The default scored position (``answer_at=key``) is a departure (see above); ``answer_at=insert`` is MAD's.
* MAD trains on 256 fixed sequences (its memorization baseline); pebench draws fresh sequences of the same map, so
  the number of times each fact is seen grows with the steps (pebench's default 600, not measured for this task).

Chance level ``1 / K`` (1/127): uniform over the values the map uses.
"""

from __future__ import annotations

from typing import Any

import torch

from pebench.options import Option
from pebench.tasks.base import IGNORE, Batch
from pebench.tasks.mad_common import MadTask, train_length_option
from pebench.tasks.registry import register


@register
class MadMemorization(MadTask):
    name = "mad_memorization"
    version = "1"
    description = "MAD memorization: a fixed map of 127 keys to values, answered at the key (position-free control)"
    options = {
        "vocab_size": Option(256, "vocabulary V: (V-1)//2 keys, value tokens, INSERT (MAD baseline 256)", type=int,
                             low=4, high=100_000),
        "map_seed": Option(12345, "seed of the fixed key -> value map (MAD's seed 12345)", type=int, low=0,
                           high=2**62),
        "answer_at": Option("key", "where the value is scored: key (position-free) or insert (MAD's layout)", str,
                            choices=("key", "insert")),
        "train_length": train_length_option(32, 2, "even; MAD's baseline: 32"),
    }  # fmt: skip
    even_lengths = True
    min_length = 2

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        v = int(self.opts["vocab_size"])
        self.n_keys, self.insert = (v - 1) // 2, v - 1
        g = torch.Generator().manual_seed(int(self.opts["map_seed"]))
        self.values = self.n_keys + torch.randperm(v - 1 - self.n_keys, generator=g)[: self.n_keys]
        self.offset = 0 if self.opts["answer_at"] == "key" else 1
        self.check_train_length()

    @property
    def vocab_size(self) -> int:
        return self.insert + 1

    @property
    def chance_level(self) -> float:
        return 1.0 / self.n_keys

    def sample(self, batch_size: int, length: int, generator: torch.Generator, split: str = "train") -> Batch:
        self.check_length(length)
        self.check_split(split)
        keys = torch.randint(0, self.n_keys, (batch_size, length // 2), generator=generator)
        inputs = torch.stack([keys, torch.full_like(keys, self.insert)], dim=2).reshape(batch_size, length)
        targets = torch.full_like(inputs, IGNORE)
        targets[:, self.offset :: 2] = self.values[keys]
        return Batch(inputs, targets)
