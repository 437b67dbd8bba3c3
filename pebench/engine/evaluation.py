"""Evaluation of a trained model, and the held-out validation points of a learning curve.

:func:`evaluate` scores a model on held-out sequences of one length (the suite's cases); :class:`Validation` gives
the training loop (:func:`pebench.engine.training.run`) the task's metric at the training length and twice it at each
learning-curve point. Both draw their data and positions from generators of their own, never the training ones.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import torch
import torch.nn.functional as F

from pebench.models import Transformer
from pebench.tasks.base import IGNORE, Batch, Task
from pebench.tasks.grid import GridEvaluated, cell_key


def batch_sums(logits: torch.Tensor, targets: torch.Tensor, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """Summed loss, correct and scored tokens, correct and all sequences of one evaluation batch, on the device."""
    scored = targets != IGNORE
    loss_sum = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), targets.reshape(-1), ignore_index=IGNORE,
                               reduction="sum")  # fmt: skip
    correct = (logits.argmax(-1) == targets) & scored
    seq_correct = (correct | ~scored).all(dim=1).sum()
    n_seq = torch.full_like(seq_correct, targets.shape[0])
    return torch.stack([loss_sum.to(dtype), correct.sum().to(dtype), scored.sum().to(dtype), seq_correct.to(dtype),
                        n_seq.to(dtype)])  # fmt: skip


def metric_values(loss_sum: float, n_correct: float, n_scored: float, n_seq_correct: float, n_seq: float
                  ) -> dict[str, float]:  # fmt: skip
    """:func:`evaluate`'s metrics from the sums of :func:`batch_sums`."""
    loss = loss_sum / max(n_scored, 1)
    return {"loss": loss, "token_accuracy": n_correct / max(n_scored, 1),
            "sequence_accuracy": n_seq_correct / max(n_seq, 1), "perplexity": math.exp(min(loss, 50.0))}  # fmt: skip


@dataclass(frozen=True)
class Validation:
    """The validation points of a learning curve: at each curve point, the task's metric on ``cfg.val_batches``
    held-out batches (the first evaluation split, batches of ``cfg.batch_size``) at the training length and at twice
    it (``2x`` is left out where the task cannot produce it or the model's encoding is sized for less).

    The data come from a generator seeded from (seed, "validation", task, length, step) and the positions an encoding
    draws from one seeded from (seed, "validation positions", task, length, step): the training generators are never
    touched and the model runs in eval mode without gradients, so the trained model is the same with or without
    validation, and the same seed and configuration give the same curve. The values stay on the device and are read
    with the training statistics in the curve point's one read
    (:meth:`pebench.engine.training.StepStats.read`). Keys:
    ``val_<metric>_1x`` and ``val_<metric>_2x``, ``<metric>`` the task's (``val_accuracy_1x``, ``val_perplexity_2x``).
    """

    task: Task
    seed: int
    device: torch.device
    n_samples: int
    batch_size: int
    lengths: tuple[tuple[str, int], ...]

    @staticmethod
    def build(model: Transformer, task: Task, val_batches: int, batch_size: int, seed: int, device: torch.device
              ) -> Validation | None:  # fmt: skip
        """The validation of ``model`` on ``task``: ``val_batches`` batches of ``batch_size`` per length (0: None)."""
        if val_batches <= 0:
            return None
        from pebench.errors import LengthError

        lengths = []
        for factor in (1, 2):
            length = task.train_length * factor
            try:
                task.check_length(length)
            except LengthError:
                continue
            if task.tokens(length) <= model.encoding.ctx.max_len:
                lengths.append((f"{factor}x", length))
        return Validation(task, seed, device, val_batches * batch_size, batch_size, tuple(lengths))

    @torch.no_grad()
    def sums(self, module: torch.nn.Module, forward: Callable[..., torch.Tensor], step: int,
             model: Transformer | None = None) -> torch.Tensor:  # fmt: skip
        """The :func:`batch_sums` of every length, on the device: ``forward(inputs, positions, annotations)`` gives
        the logits (annotations: the task's, None when it has none), ``module`` is put in eval mode meanwhile (then
        back in train mode), ``model`` (default ``module``) is the one whose encoding sets the evaluation length and
        draws positions."""
        from pebench.hashing import derive_seed

        model = model if model is not None else module  # type: ignore[assignment]
        task = self.task
        dtype = torch.float32 if self.device.type == "mps" else torch.float64
        out = []
        module.eval()
        try:
            for _, length in self.lengths:
                gen = torch.Generator().manual_seed(derive_seed(self.seed, "validation", task.name, length, step))
                pos_gen = torch.Generator().manual_seed(
                    derive_seed(self.seed, "validation positions", task.name, length, step))  # fmt: skip
                total = torch.zeros(5, dtype=dtype, device=self.device)
                with eval_length(model, task.train_length, length):  # type: ignore[arg-type]
                    for cpu in task.eval_batches(length, self.n_samples, gen, task.eval_splits[0], self.batch_size):
                        batch = Batch(cpu.inputs, cpu.targets, eval_positions(model, cpu, pos_gen),
                                      cpu.annotations).to(self.device)  # fmt: skip
                        logits = forward(batch.inputs, batch.positions, batch.annotations)
                        total += batch_sums(logits, batch.targets, dtype)
                out.append(total)
        finally:
            module.train()
        return torch.cat(out) if out else torch.zeros(0, dtype=dtype, device=self.device)

    def point(self, values: list[float]) -> dict[str, float]:
        """The ``val_<metric>_<factor>x`` entries of a curve point from the values :meth:`sums` gave."""
        out = {}
        for i, (factor, _) in enumerate(self.lengths):
            out[f"val_{self.task.metric}_{factor}"] = self.task.score(metric_values(*values[5 * i : 5 * i + 5]))
        return out


@contextlib.contextmanager
def eval_length(model: Transformer, train_length: int, length: int) -> Iterator[None]:
    """Tell the encoding the evaluation length for the duration of the block, then restore the training length."""
    model.encoding.configure_eval(train_length, length)
    try:
        yield
    finally:
        model.encoding.configure_eval(train_length, train_length)


def eval_positions(model: Transformer, batch: Batch, generator: torch.Generator) -> torch.Tensor | None:
    """The positions of an evaluation batch: the task's own when it sets them, else the encoding's
    (:meth:`~pebench.encodings.base.PositionalEncoding.positions` with ``train=False``, drawn from ``generator``;
    None: 0..T-1)."""
    if batch.positions is not None:
        return batch.positions
    return model.encoding.positions(batch.inputs.shape[0], batch.inputs.shape[1], generator, train=False)


@torch.no_grad()
def evaluate(
    model: Transformer,
    task: Task,
    length: int,
    split: str,
    n_samples: int,
    seed: int,
    device: torch.device,
    batch_size: int = 64,
) -> dict[str, float]:
    """Loss, token accuracy and sequence accuracy on ``n_samples`` held-out sequences at task length ``length``.

    The batches come from :meth:`Task.eval_batches` with a generator seeded from (seed, "eval", task, length,
    split), separate from training; positions an encoding draws at evaluation (:func:`eval_positions`) come from a
    second generator seeded from (seed, "eval positions", task, length, split), so they never change the data and
    the same seed gives the same positions and metrics. Token accuracy is over scored positions; a sequence is
    correct when all its scored positions are; perplexity is exp(mean loss over scored positions).
    """
    from pebench.hashing import derive_seed

    task.check_length(length)
    model.to(device).eval()
    gen = torch.Generator().manual_seed(derive_seed(seed, "eval", task.name, length, split))
    pos_gen = torch.Generator().manual_seed(derive_seed(seed, "eval positions", task.name, length, split))
    dtype = torch.float32 if device.type == "mps" else torch.float64
    total = torch.zeros(5, dtype=dtype, device=device)
    with eval_length(model, task.train_length, length):
        for cpu_batch in task.eval_batches(length, n_samples, gen, split, batch_size):
            positions = eval_positions(model, cpu_batch, pos_gen)
            batch = Batch(cpu_batch.inputs, cpu_batch.targets, positions, cpu_batch.annotations).to(device)
            total += batch_sums(model(batch.inputs, batch.positions, batch.annotations), batch.targets, dtype)
    values = total.tolist()
    return {**metric_values(*values), "n_samples": int(values[4]), "n_scored": int(values[2])}


ATTENTION_TOKENS = 32
"""Length of the sequence whose last-layer attention maps are stored with the training-length result."""


class AttentionMaps(NamedTuple):
    """The last layer's attention maps on one evaluation sequence, as :func:`pebench.records.attention.encode` takes
    them (``encode(*maps)``)."""

    maps: np.ndarray
    """``(H, t, t)`` float32 attention probabilities, on the CPU."""
    layer: int
    tokens: list[int]


@torch.no_grad()
def attention_maps(model: Transformer, task: Task, seed: int, device: torch.device, n_tokens: int = ATTENTION_TOKENS
                   ) -> AttentionMaps:  # fmt: skip
    """The last layer's attention on the first ``n_tokens`` tokens of one evaluation sequence.

    The sequence is drawn at the training length from the task's first evaluation split with a generator seeded
    from (seed, "attention", task, length), its positions as in evaluation (:func:`eval_positions`, from a generator
    seeded from (seed, "attention positions", task, length)), then both (and the task's annotations) are cut to
    ``n_tokens``: attention is causal, so these rows equal the top-left block of the full sequence's maps.
    """
    from pebench.hashing import derive_seed

    gen = torch.Generator().manual_seed(derive_seed(seed, "attention", task.name, task.train_length))
    pos_gen = torch.Generator().manual_seed(derive_seed(seed, "attention positions", task.name, task.train_length))
    batch = task.sample(1, task.train_length, gen, task.eval_splits[0])
    t = min(n_tokens, batch.inputs.shape[1])
    tokens = batch.inputs[:, :t].to(device)
    full = eval_positions(model, batch, pos_gen)
    positions = None if full is None else full[..., :t].to(device)
    notes = None if batch.annotations is None else {k: v[:, :t].to(device) for k, v in batch.annotations.items()}
    maps = model.attention_maps(tokens, positions, layer=-1, annotations=notes)[0].float().cpu()  # (H, t, t)
    return AttentionMaps(maps.numpy(), len(model.blocks) - 1, tokens[0].tolist())


def evaluate_grid(model: Transformer, task: Task, length: int, splits: dict[str, dict[str, float]], n_samples: int,
                  seed: int, device: torch.device, batch_size: int = 64) -> dict[str, Any] | None:  # fmt: skip
    """The grid cells ``task`` scores at ``length`` (:mod:`pebench.tasks.grid`) as stored in ``metrics["grid"]``:
    each cell :func:`evaluate`'d on ``n_samples`` sequences of its split, or the result in ``splits`` (the case's
    split results) when its split is one of them; None for a task without cells at ``length``."""
    if not isinstance(task, GridEvaluated) or not (cells := task.grid_cells(length)):
        return None
    return {"axes": list(task.grid_axes),
            "cells": {cell_key(r, c): splits[split] if split in splits else
                      evaluate(model, task, length, split, n_samples, seed, device, batch_size)
                      for (r, c), split in cells.items()}}  # fmt: skip


@dataclass(frozen=True)
class CaseScores:
    """What evaluating a trained model at one case's length gives (:func:`evaluate_case`)."""

    splits: dict[str, dict[str, float]]
    """Every evaluation split's :func:`evaluate` result, the task's first split first."""
    score: float
    """The task's metric of the first split (:meth:`~pebench.tasks.base.Task.score`)."""
    grid: dict[str, Any] | None
    """The task's grid cells at this length (:func:`evaluate_grid`); None for a task without cells."""
    seconds: float
    """Wall time of the splits and the grid (not the attention maps)."""
    attention: AttentionMaps | None
    """At the training length, when the first split's loss is finite: :func:`attention_maps`; else None."""

    @property
    def main(self) -> dict[str, float]:
        """The first split's result, the case's loss and accuracies."""
        return next(iter(self.splits.values()))


def evaluate_case(model: Transformer, task: Task, length: int, seed: int, device: torch.device, n_samples: int,
                  batch_size: int = 64) -> CaseScores:  # fmt: skip
    """Evaluate the trained ``model`` at task length ``length``: every evaluation split of ``task`` on ``n_samples``
    sequences (:func:`evaluate`), the task's grid cells (:func:`evaluate_grid`) and, at the training length when the
    loss is finite, the attention maps (:func:`attention_maps`), each from generators seeded from ``seed``."""
    start = time.perf_counter()
    splits = {split: evaluate(model, task, length, split, n_samples, seed, device, batch_size)
              for split in task.eval_splits}  # fmt: skip
    grid = evaluate_grid(model, task, length, splits, n_samples, seed, device, batch_size)
    seconds = time.perf_counter() - start
    main = splits[task.eval_splits[0]]
    score = task.score(main)
    snapshot = length == task.train_length and math.isfinite(main["loss"])
    maps = attention_maps(model, task, seed, device) if snapshot else None
    return CaseScores(splits, score, grid, seconds, maps)
