"""MAD fuzzy in-context recall: in-context recall whose keys and values are runs of 1-3 adjacent tokens.

Source: Poli et al., "Mechanistic Design and Scaling of Hybrid Architectures", ICML 2024, arXiv:2403.17844 (section
3, "fuzzy in-context recall"; appendix B), reference code github.com/athms/mad-lab, ``mad/data/instances.py``
(``generate_fuzzy_in_context_recall_instance``, baseline ``configs/tasks/fuzzy-in-context-recall.yml``:
``vocab_size`` 16, ``k_motif_size`` 3, ``v_motif_size`` 3, ``multi_query``). It probes grouping adjacent tokens into
one unit (a key or value spread over several tokens).

Definition. Vocabulary ``V`` (option ``vocab_size``, default 16): ``PAD = V - 1``; of the other ``V - 1`` tokens the
first ``(V-1)//2`` are key tokens (``0 .. 6`` at 16) and the rest value tokens (``7 .. 14``). A key is an ordered
tuple of ``s`` distinct key tokens, a value an ordered tuple of ``r`` distinct value tokens (uniform over such
tuples). Sizes: ``r`` uniform over ``1 .. R`` (``v_motif_size``, default 3); ``s`` uniform over ``1 .. S``
(``k_motif_size``, default 3) in training and always ``S`` in the evaluation split ``test`` (MAD's test set uses
only the longest keys). Since key and value tokens are disjoint, a sequence parses uniquely into alternating runs:
each maximal run of key tokens is a key, the run of value tokens after it its value.

A sequence of ``L`` tokens (the task length): a probe pair ``(k*, v*)`` is drawn, and a point ``q`` uniform over
``0 .. L - 2|k* v*| - 1``. The context is built pair by pair while it is shorter than ``L - |k* v*| - (S + R)``: once
its length reaches ``q`` (or the next pair could end it, below) the probe pair is put in (once); otherwise a key of
a drawn size, whose value is ``v*`` if it is ``k*``, the value it already has in this sequence, or else a new value
of a drawn size. Then the probe pair again (the query), and ``PAD`` tokens on the left up to ``L + 1`` tokens; the
inputs are the first ``L``.

Scoring (``test``): every value token of a pair whose key occurred in an earlier pair, predicted one position before
it (the value's first token at the key's last token); the query's value is always scored. Training (``train``):
MAD's training targets, the next token at every position.

Defaults and departures from MAD:

* ``V = 16``, ``S = R = 3``: MAD's baseline. Shortest length ``2 (S + R) + 1`` (13), where ``q`` has a value to
  take.
* Version 2: training length 32 (option ``train_length``; MAD's baseline 128, version 1 64), quick tier 32, 64, 128,
  and 2400 training steps (``default_steps``; version 1 pebench's global 600). At version 1's 64 tokens and 600 steps
  no core encoding learned it in 3 seeds (normalised 0.02-0.41 at 64, sinusoidal best; docs/tasks.md); at 32 tokens
  with 2400 steps RoPE scored 0.97 and sinusoidal 1.00 at 32 (one seed each, 2026-11-26), both near the floor
  below at 64 and 128. MAD itself trains for 200 epochs of 12,800 sequences.
* MAD's context can end without the probe pair (when ``q`` falls in or after the context's last pair); the query's
  answer is then not in the sequence. Here the probe pair is also put in when the next pair could be the context's
  last (its length plus ``S + R`` reaches the bound), so it always precedes the query and the sequence still fits.
* MAD draws keys and values from shuffled lists of every tuple; here ``random.sample`` draws the same uniform
  tuples. Fresh batches instead of MAD's fixed 12,800 sequences.
* In training a key token can end the key or continue it, so the first value token is not always predictable; in
  ``test`` every key has ``S`` tokens. At the default sizes a repeated size-3 key is rare (210 of them), so the
  scored tokens are mostly the query's value.

Chance level ``1 / (V - 1 - (V-1)//2)`` (1/8): uniform over the value tokens. The most frequent value token so far, a
guess that ignores the key, scores about 0.26, 0.22, 0.21 and 0.19 at lengths 32, 64, 128 and 256 (1,000 test
sequences per length, generator seed 9).
"""

from __future__ import annotations

import random
from typing import Any

import torch

from pebench.errors import OptionError
from pebench.options import Option
from pebench.tasks.base import IGNORE, Batch
from pebench.tasks.common import python_random
from pebench.tasks.mad_common import MadTask, train_length_option
from pebench.tasks.registry import register


@register
class MadFuzzyRecall(MadTask):
    name = "mad_fuzzy_recall"
    version = "2"
    default_steps = 2400  # version 2: see the module docstring
    description = "MAD fuzzy in-context recall: keys and values of 1-3 adjacent tokens; recall repeated keys' values"
    options = {
        "vocab_size": Option(16, "vocabulary V: PAD = V - 1, then key and value tokens (MAD baseline 16)", type=int,
                             low=5, high=1000),
        "k_motif_size": Option(3, "longest key S, in tokens (MAD baseline 3)", type=int, low=1, high=16),
        "v_motif_size": Option(3, "longest value R, in tokens (MAD baseline 3)", type=int, low=1, high=16),
        "train_length": train_length_option(32, 3, "MAD's baseline: 128; version 1: 64; >= 2 (S + R) + 1"),
    }  # fmt: skip

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        v = int(self.opts["vocab_size"])
        self.pad = v - 1
        self.key_tokens = list(range((v - 1) // 2))
        self.value_tokens = list(range((v - 1) // 2, v - 1))
        self.s, self.r = int(self.opts["k_motif_size"]), int(self.opts["v_motif_size"])
        for name, size, tokens in (("k_motif_size", self.s, self.key_tokens), ("v_motif_size", self.r,
                                                                               self.value_tokens)):  # fmt: skip
            if size > len(tokens):
                raise OptionError(f"task {self.name}: option {name}={size} exceeds the {len(tokens)} distinct tokens "
                                  f"of vocab_size={v}; valid: {name} <= {len(tokens)}")  # fmt: skip
        self.min_length = 2 * (self.s + self.r) + 1
        self.check_train_length()

    @property
    def vocab_size(self) -> int:
        return self.pad + 1

    @property
    def chance_level(self) -> float:
        return 1.0 / len(self.value_tokens)

    def row(self, rng: random.Random, length: int, train: bool) -> tuple[list[int], list[bool]]:
        """One sequence of ``length + 1`` tokens and which of them are scored values (MAD's generator, see above)."""
        key_sizes = list(range(1, self.s + 1)) if train else [self.s]

        def key(size: int) -> tuple[int, ...]:
            return tuple(rng.sample(self.key_tokens, size))

        def value() -> tuple[int, ...]:
            return tuple(rng.sample(self.value_tokens, rng.randint(1, self.r)))

        k_probe, v_probe = key(rng.choice(key_sizes)), value()
        probe = len(k_probe) + len(v_probe)
        at = rng.randrange(length - 2 * probe)
        seq: list[int] = []
        scored: list[bool] = []
        table: dict[tuple[int, ...], tuple[int, ...]] = {k_probe: v_probe}
        seen: set[tuple[int, ...]] = set()
        added = False
        limit = length - probe - (self.s + self.r)
        while len(seq) < limit:
            if not added and (len(seq) >= at or len(seq) + self.s + self.r >= limit):  # the latter: see the docstring
                k, v, added = k_probe, v_probe, True
            else:
                k = key(rng.choice(key_sizes))
                added = added or k == k_probe
                v = table.setdefault(k, value())
            seq += [*k, *v]
            scored += [False] * len(k) + [k in seen] * len(v)
            seen.add(k)
        seq += [*k_probe, *v_probe]
        scored += [False] * len(k_probe) + [True] * len(v_probe)
        pad = length + 1 - len(seq)
        return [self.pad] * pad + seq, [False] * pad + scored

    def sample(self, batch_size: int, length: int, generator: torch.Generator, split: str = "train") -> Batch:
        self.check_length(length)
        self.check_split(split)
        rng = python_random(generator)
        rows = [self.row(rng, length, split == "train") for _ in range(batch_size)]
        tokens = torch.tensor([seq for seq, _ in rows], dtype=torch.long)
        scored = torch.tensor([flags for _, flags in rows], dtype=torch.bool)
        inputs = tokens[:, :-1]
        if split == "train":
            return Batch(inputs, tokens[:, 1:].clone())
        return Batch(inputs, torch.where(scored[:, 1:], tokens[:, 1:], IGNORE))
