"""Shared machinery of the six MAD tasks (``mad_*``; not a task itself).

Source: Poli et al., "Mechanistic Design and Scaling of Hybrid Architectures", ICML 2024, arXiv:2403.17844 (MAD:
six synthetic token-manipulation tasks, described in its section 3 and appendix B), and its reference repository
github.com/athms/mad-lab (the generators in ``mad/data/instances.py``, the baseline settings in
``configs/tasks/*.yml``, the defaults of ``MADConfig`` in ``mad/configs.py``). The constants of every ``mad_*`` task
were read from that repository; the paper's appendix text itself was not available here, so the section pointers
are the paper's layout as cited, not quoted.

What the repository does that every MAD task here shares:

* Two splits. MAD builds a training set (``is_training=True``) and a test set (``is_training=False``); pebench
  draws fresh batches from the same two distributions (``split="train"`` and the evaluation split ``"test"``), so
  MAD's fixed training-set size (12,800 sequences at baseline) is not modelled.
* The three recall tasks train with the language-modelling objective (the target at every position is the next
  token, MAD's ``inputs[1:]``) and score only the recalled values at evaluation; selective copying, compression and
  memorization train and evaluate on the same scored positions.
* Metric: accuracy over the scored tokens (MAD's ``Accuracy``, a flattened multi-class accuracy that skips the
  ignored targets).

:func:`recall_batch` is the (noisy) in-context recall generator shared by ``mad_recall`` and ``mad_noisy_recall``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from torch import Tensor

from pebench.errors import LengthError, OptionError
from pebench.options import Option
from pebench.tasks.base import IGNORE, Batch, Task

MAD_PAPER = "Poli et al. 2024 (MAD), arXiv:2403.17844; github.com/athms/mad-lab"


def train_length_option(default: int, low: int, note: str) -> Option:
    """The ``train_length`` option of a MAD task (quick tier: T, 2T, 4T)."""
    return Option(default, f"training length T (quick tier: T, 2T, 4T; {note})", type=int, low=low, high=4096)


class MadTask(Task):
    """A MAD task: option ``train_length`` sets the training length; ``even_lengths`` tasks build their sequences
    of two-token pairs and refuse odd lengths in one line."""

    paper = MAD_PAPER
    even_lengths: ClassVar[bool] = False

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.train_length = int(self.opts["train_length"])

    def check_train_length(self) -> None:
        """One-line :class:`OptionError` when option ``train_length`` is a length this task cannot produce."""
        try:
            self.check_length(self.train_length)
        except LengthError as err:
            raise OptionError(f"task {self.name}: option train_length={self.train_length} is invalid: "
                              f"{str(err).split(': ', 1)[1]}") from None  # fmt: skip

    def check_length(self, length: int) -> None:
        super().check_length(length)
        if self.even_lengths and length % 2:
            raise LengthError(f"task {self.name}: length {length} is odd; valid lengths: even numbers >= "
                              f"{self.min_length}")  # fmt: skip


def next_token_targets(tokens: Tensor) -> Tensor:
    """MAD's training targets of the recall tasks: the next token at every position, IGNORE at the last one."""
    targets = torch.full_like(tokens, IGNORE)
    targets[:, :-1] = tokens[:, 1:]
    return targets


def first_positions(keys: Tensor, real: Tensor, n_keys: int) -> Tensor:
    """``(B, n_keys)``: the first pair index at which each key occurs among the ``real`` pairs (``P`` if never)."""
    b, p = keys.shape
    pos = torch.arange(p).expand(b, p).masked_fill(~real, p)
    first = torch.full((b, n_keys), p, dtype=torch.long)
    return first.scatter_reduce(1, keys, pos, reduce="amin")


def recall_batch(batch_size: int, length: int, generator: torch.Generator, n_keys: int, n_values: int,
                 frac_noise: float = 0.0, noise_first: int = 0, n_noise: int = 0,
                 lm_targets: bool = False) -> Batch:  # fmt: skip
    """Multi-query (noisy) in-context recall, MAD's ``generate_in_context_recall_instance`` with ``multi_query``.

    ``P = length // 2`` two-token slots. Keys are ``0 .. n_keys-1``, values ``n_keys .. n_keys+n_values-1``; each
    sequence draws one value per key (i.i.d. uniform, so two keys may share a value). Slots ``0 .. P-2`` are noise
    with probability ``frac_noise`` (two i.i.d. tokens of ``noise_first .. noise_first+n_noise-1``), except one
    uniformly drawn slot that is always a pair; the others hold a uniform key and its value. The last slot is the
    probe: a key drawn uniformly from the keys presented in slots ``0 .. P-2``, and its value. Scored (``"test"``):
    the value of every pair whose key occurred in an earlier pair, predicted at the key's position; the probe is
    always scored. With ``lm_targets`` every position is scored with its next token (MAD's training targets)."""
    b, p = batch_size, length // 2
    keys = torch.randint(0, n_keys, (b, p), generator=generator)
    table = torch.randint(n_keys, n_keys + n_values, (b, n_keys), generator=generator)
    noise = torch.zeros(b, p, dtype=torch.bool)
    if frac_noise > 0:
        noise[:, : p - 1] = torch.rand(b, p - 1, generator=generator) < frac_noise
        noise[torch.arange(b), torch.randint(0, p - 1, (b,), generator=generator)] = False
    context = ~noise
    context[:, -1] = False
    presented = first_positions(keys, context, n_keys) < p
    score = torch.rand(b, n_keys, generator=generator).masked_fill(~presented, -1.0)
    keys[:, -1] = score.argmax(dim=1)
    real = ~noise
    seen_before = first_positions(keys, real, n_keys).gather(1, keys) < torch.arange(p)
    values = table.gather(1, keys)
    tokens = torch.stack([keys, values], dim=2)  # (B, P, 2)
    if frac_noise > 0:
        filler = torch.randint(noise_first, noise_first + n_noise, (b, p, 2), generator=generator)
        tokens = torch.where(noise[..., None], filler, tokens)
    tokens = tokens.reshape(b, 2 * p)
    if lm_targets:
        return Batch(tokens, next_token_targets(tokens))
    targets = torch.full_like(tokens, IGNORE)
    scored = seen_before & real
    targets[:, 0::2] = torch.where(scored, values, IGNORE)
    return Batch(tokens, targets)
