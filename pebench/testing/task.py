"""A task's contract, property by property:

* ``declarations``: a registered metric, a finite chance level (at most 1 for a percentage), the training length
  among the quick tier's lengths, at least one evaluation split, known annotations, a version and a description;
* ``batch layout``: at the training range's ends and every quick-tier length, in training and every evaluation split,
  a batch is ``(B, tokens(length))`` int64 inputs in the vocabulary, targets in the vocabulary or ``IGNORE`` with a
  scored position in every row, and exactly the declared annotations, ``(B, T)`` int64, never negative;
* ``determinism``: one generator seed gives the same batch twice (the global generator is not reseeded in between);
* ``lengths``: every length of both tiers is accepted and one below ``min_length`` is a one-line
  :class:`~pebench.errors.LengthError`;
* ``option errors``: each out-of-range value of a declared option, and an unknown option, is a one-line
  :class:`~pebench.errors.OptionError`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch

from pebench import metrics
from pebench.errors import LengthError
from pebench.tasks.base import ANNOTATIONS, IGNORE, TIERS, Batch, Task
from pebench.testing.report import FAIL, PASS, Property, Report, option_errors

BATCH = 2


def _sample(task: Task, length: int, split: str, seed: int = 1) -> Batch:
    return task.sample(BATCH, length, torch.Generator().manual_seed(seed), split)


def declarations(task: Task) -> Property:
    metric = task.metric in metrics.available()
    chance = task.chance_level
    rules = {
        "metric registered": metric,
        "chance level finite, >= 0 (<= 1 for a percentage)": math.isfinite(chance) and chance >= 0
        and (not metric or not metrics.get(task.metric).percent or chance <= 1),
        "training length in the quick tier": task.train_length in task.eval_lengths("quick"),
        "evaluation splits": bool(task.eval_splits),
        "annotations known": set(task.annotations) <= set(ANNOTATIONS),
        "version and description": bool(task.version) and bool(task.description),
        "vocabulary of 2 or more": task.vocab_size >= 2,
    }  # fmt: skip
    broken = [r for r, ok in rules.items() if not ok]
    return Property("declarations", FAIL if broken else PASS, f"{len(rules) - len(broken)}/{len(rules)}",
                    "metric, chance level, lengths, splits, annotations, version" if not broken else
                    "inconsistent: " + "; ".join(broken))  # fmt: skip


def _layout_errors(task: Task, batch: Batch, length: int) -> list[str]:
    want = (BATCH, task.tokens(length))
    errors = []
    x, y = batch.inputs, batch.targets
    if tuple(x.shape) != want or tuple(y.shape) != want:
        errors.append(f"inputs {tuple(x.shape)} / targets {tuple(y.shape)}, not {want}")
    if x.dtype != torch.int64 or y.dtype != torch.int64:
        errors.append(f"dtypes {x.dtype} / {y.dtype}, not int64")
    if x.numel() and (x.min() < 0 or x.max() >= task.vocab_size):
        errors.append(f"inputs outside 0..{task.vocab_size - 1}")
    scored = y != IGNORE
    if (y[scored] < 0).any() or (y[scored] >= task.vocab_size).any():
        errors.append(f"targets outside 0..{task.vocab_size - 1} and IGNORE")
    if not scored.any(dim=-1).all():
        errors.append("a row without a scored position")
    notes = batch.annotations or {}
    if set(notes) != set(task.annotations):
        errors.append(f"annotations {sorted(notes)}, declared {sorted(task.annotations)}")
    for name, value in notes.items():
        if value.shape != x.shape or value.dtype != torch.int64 or (value < 0).any():
            errors.append(f"annotation {name} not (B, T) int64 >= 0")
    if batch.positions is not None and batch.positions.shape[-1] != x.shape[-1]:
        errors.append(f"positions {tuple(batch.positions.shape)} do not match the inputs")
    return errors


def batch_layout(task: Task) -> Property:
    lengths = sorted({*task.train_range, *task.eval_lengths("quick")})
    errors, n = [], 0
    for split in ("train", *task.eval_splits):
        for length in lengths:
            n += 1
            errors += [f"{split} L{length}: {e}" for e in _layout_errors(task, _sample(task, length, split), length)]
    return Property("batch layout", FAIL if errors else PASS, f"{n} batches",
                    "shapes, dtypes, vocabulary, scored positions and annotations of every split and quick length"
                    if not errors else "; ".join(errors[:2]))  # fmt: skip


def _same(a: Batch, b: Batch) -> bool:
    def eq(x: Any, y: Any) -> bool:
        return (x is None and y is None) or (x is not None and y is not None and torch.equal(x, y))

    notes_a, notes_b = a.annotations or {}, b.annotations or {}
    return (eq(a.inputs, b.inputs) and eq(a.targets, b.targets) and eq(a.positions, b.positions)
            and set(notes_a) == set(notes_b) and all(eq(v, notes_b[k]) for k, v in notes_a.items()))  # fmt: skip


def determinism(task: Task) -> Property:
    splits = ("train", task.eval_splits[0])
    differ = [s for s in splits if not _same(_sample(task, task.train_length, s), _sample(task, task.train_length, s))]
    return Property("determinism", FAIL if differ else PASS, f"{len(splits) - len(differ)}/{len(splits)}",
                    "one generator seed gives one batch (training and evaluation)" if not differ else
                    f"two batches from one seed differ in split {differ[0]}")  # fmt: skip


def lengths(task: Task) -> Property:
    every = sorted({n for tier in TIERS for n in task.eval_lengths(tier)} | set(task.train_range))
    errors = []
    for n in every:
        try:
            task.check_length(n)
        except LengthError as err:
            errors.append(f"L{n} refused: {err}")
    too_short = task.min_length - 1
    try:
        task.check_length(too_short)
        errors.append(f"L{too_short} (below min_length) accepted")
    except LengthError as err:
        if "\n" in str(err).strip():
            errors.append(f"L{too_short}: a multi-line error")
    return Property("lengths", FAIL if errors else PASS, f"{len(every)} lengths",
                    f"every length of both tiers accepted, {too_short} refused in one line" if not errors else
                    "; ".join(errors[:2]))  # fmt: skip


def check_task_class(cls: type[Task], options: Mapping[str, Any] | None = None, source: str = "") -> Report:
    """Every property of the module docstring for ``cls`` (built with ``options``)."""
    report = Report("task", cls.name or cls.__qualname__, source or f"module {cls.__module__}")
    task = report.built(lambda: cls(**dict(options or {})))
    if task is None:
        return report
    report.add("declarations", lambda: declarations(task))
    report.add("batch layout", lambda: batch_layout(task))
    report.add("determinism", lambda: determinism(task))
    report.add("lengths", lambda: lengths(task))
    report.add("option errors", lambda: option_errors(f"task {cls.name}", cls.options,
                                                      lambda o: cls(**{**dict(options or {}), **o})))  # fmt: skip
    return report
