"""Forgetting multi-query associative recall: MQAR in which some keys are assigned a new value later in the sequence;
every query asks for the key's most recent value.

Source. Multi-query associative recall (MQAR) is Arora et al., "Zoology: Measuring and Improving Recall in Efficient
Language Models", ICLR 2024, arXiv:2312.04927 (sec. 3; pebench's form is :mod:`pebench.tasks.assoc_recall`). The
forgetting variant is not in that paper: its definition here is the generator ``forgetting_mqar`` of the Zoology
repository (github.com/HazyResearch/zoology, ``zoology/data/forgetting_mqar.py``, added 2026-01-11, commit dbcb60d),
whose docstring says the model "must remember the LAST (most recent) value for each key". No paper that defines or
evaluates it was found (searched: the Zoology paper, the repository's README and configs, and the web), so no
published protocol or result is reproduced; the definition follows that generator, in pebench's MQAR layout.

Definition. Keys are ``0 .. K-1`` (``K`` = option ``n_keys``), values ``K .. K+V-1`` (``V`` = ``n_values``),
``FILL = K + V`` (vocabulary ``K + V + 1``). With ``P`` pairs (``n_pairs``) and ``U`` updates (``n_updates``, at most
``P``), a sequence of ``L`` tokens is

    k_1 v_1 .. k_P v_P   k_u1 w_1 .. k_uU w_U   then   L - 2(P + U) query-section tokens

* the ``P`` keys are distinct (uniform without replacement) and so are their first values (uniform without
  replacement, as in the generator; so ``V >= P``);
* the updates re-assign ``U`` distinct keys drawn uniformly from the ``P``, in a uniformly random order; each new
  value ``w`` is uniform over the ``V - 1`` values other than that key's first value, so an update always changes
  the answer;
* the query section is ``FILL`` except at ``P`` distinct uniformly drawn positions holding the ``P`` keys in a
  uniformly random order (every key is queried once, updated or not). The target at a query is the key's **most
  recent** value before it: ``w`` for an updated key, its first value otherwise. Every other position is IGNORE.

Shortest length ``2(P + U) + P``. Metric: accuracy over the queries.

Defaults (version 2): ``P = 8`` pairs (the generator's default), ``U = 2`` updates, ``K = V = 16`` keys and values,
training length 32 (option ``train_length``; quick tier 32, 64, 128), the default 600 steps. Version 1 had the
generator's ``U = 4``, ``K = V = 64`` (as ``assoc_recall``) and Zoology's default sequence length 64:
``--task-options mqar_forget:n_updates=4,n_keys=64,n_values=64,train_length=64``. The default model learned no
version-1 setting that was tried (seed 0, 2026-11-26; accuracy at the training length; docs/tasks.md): the five core
encodings at version 1 0.11-0.16 (chance 1/64, ignoring the updates would give 0.5); at 32 tokens, where
``assoc_recall`` is learned, ALiBi 0.15 and RoPE 0.15 (600 steps), 0.15 and 0.16 (2400 steps); with 4 pairs all
updated (Zoology's example sweep, ``n_pairs=4``) 0.27 and 0.26; with ``K = V = 16`` and ``U = 4`` 0.22 and 0.23; with
``U = 2`` and ``K = V = 64`` 0.14 and 0.13. With ``U = 2`` and ``K = V = 16`` together ALiBi scored 0.92 (RoPE 0.20),
above the 0.75 of a model that ignores the updates: recency was learned, so these are version 2's defaults. Zoology's
vocabulary is 8,192 (``n_keys=4095,n_values=4096``).

Differences from the generator, each to match ``assoc_recall``: non-query positions hold ``FILL`` (the generator
fills them with random tokens); query positions are uniform over the query section (the generator draws power-law
gaps at even offsets, ``power_a = 0.01``); keys start at 0 (the generator keeps token 0 out of the keys). The
generator draws each new value different from the first value of the ``j``-th pair rather than of the key it
updates (so an update can repeat the old value); its docstring's intent, a different value, is followed here.

Chance level ``1 / V`` (uniform over the values). A model that recalls each key's first value and ignores the
updates scores ``(P - U) / P`` (0.75 at the defaults, 0.5 in version 1): only the updated keys need recency.
"""

from __future__ import annotations

from typing import Any

import torch

from pebench.errors import OptionError
from pebench.options import Option
from pebench.tasks.base import IGNORE, Batch, Task
from pebench.tasks.registry import register


@register
class MqarForget(Task):
    name = "mqar_forget"
    version = "2"
    description = "MQAR with U (2) of P (8) keys re-assigned later: predict each queried key's latest value (train 32)"
    paper = "Arora et al. 2024 (Zoology, MQAR), arXiv:2312.04927; forgetting_mqar of HazyResearch/zoology"
    options = {
        "n_pairs": Option(8, "keys P per sequence, each queried once", type=int, low=1, high=10_000),
        "n_updates": Option(2, "keys U re-assigned a new value after the P pairs (<= n_pairs; version 1: 4)",
                            type=int, low=0, high=10_000),
        "n_keys": Option(16, "key vocabulary K (>= n_pairs; version 1: 64)", type=int, low=1, high=100_000),
        "n_values": Option(16, "value vocabulary V (>= n_pairs, >= 2; version 1: 64)", type=int, low=2, high=100_000),
        "train_length": Option(32, "training length T (quick tier: T, 2T, 4T; >= 2 * (n_pairs + n_updates) + "
                               "n_pairs; version 1: 64)", type=int, low=3, high=4096),
    }  # fmt: skip
    train_length = 32

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.p, self.u, self.k, self.v = (int(self.opts[n]) for n in ("n_pairs", "n_updates", "n_keys", "n_values"))
        bad = [(o, v, f"int in [0, n_pairs={self.p}]") for o, v in (("n_updates", self.u),) if v > self.p]
        bad += [(o, v, f"int >= n_pairs={self.p}") for o, v in (("n_keys", self.k), ("n_values", self.v)) if v < self.p]
        if bad:
            opt, value, valid = bad[0]
            raise OptionError(f"task {self.name}: option {opt}={value} is out of range; valid: {valid}")
        self.fill = self.k + self.v
        self.context = 2 * (self.p + self.u)
        self.min_length = self.context + self.p
        self.train_length = int(self.opts["train_length"])  # below min_length: the suite's one-line length error

    @property
    def vocab_size(self) -> int:
        return self.k + self.v + 1

    @property
    def chance_level(self) -> float:
        return 1.0 / self.v

    def sample(self, batch_size: int, length: int, generator: torch.Generator, split: str = "train") -> Batch:
        self.check_length(length)
        self.check_split(split)
        b, p, u, c = batch_size, self.p, self.u, self.context
        rows = torch.arange(b)[:, None]
        keys = torch.rand(b, self.k, generator=generator).argsort(dim=1)[:, :p]
        first = self.k + torch.rand(b, self.v, generator=generator).argsort(dim=1)[:, :p]  # distinct values
        updated = torch.rand(b, p, generator=generator).argsort(dim=1)[:, :u]  # which pairs, in update order
        shift = torch.randint(1, self.v, (b, u), generator=generator)  # any value but the key's first one
        new = self.k + (first.gather(1, updated) - self.k + shift) % self.v
        latest = first.clone()
        latest[rows, updated] = new
        inputs = torch.full((b, length), self.fill, dtype=torch.long)
        inputs[:, 0 : 2 * p : 2] = keys
        inputs[:, 1 : 2 * p : 2] = first
        inputs[:, 2 * p : c : 2] = keys.gather(1, updated)
        inputs[:, 2 * p + 1 : c : 2] = new
        targets = torch.full_like(inputs, IGNORE)
        q_pos = c + torch.rand(b, length - c, generator=generator).argsort(dim=1)[:, :p]
        which = torch.rand(b, p, generator=generator).argsort(dim=1)
        inputs[rows, q_pos] = keys.gather(1, which)
        targets[rows, q_pos] = latest.gather(1, which)
        return Batch(inputs, targets)
