"""A second phase of a model's life: continue a trained model at a longer context (issue 88, ``--extend F``).

The field applies its most used long-context methods to a *trained* model: Position Interpolation, NTK, YaRN, Llama
3's scaling and LongRoPE extend a RoPE model with a short fine-tune at the longer length (Chen et al. 2023,
arXiv:2306.15595; Peng et al. 2023, arXiv:2309.00071); one base model, one extension data set and budget and one
evaluation for every method is the protocol of Lu et al.'s controlled study (arXiv:2409.12181), followed here:

1. the **base model** is the case's model of the from-scratch protocol at the same point (the same settings without
   the extension axis), from the checkpoint cache or trained first. A method that declares an
   :class:`~pebench.encodings.extension.Extension` starts from its base encoding's model (``pi``, ``ntk``, ``yarn``,
   ``llama3`` and ``longrope`` from ``rope``'s: the same weights as ``rope``'s own row, the direct fine-tune); every
   other encoding continues its own model unchanged (the controls);
2. the **fine-tune**: a copy of the base weights trained ``steps`` more steps (``--extend-steps``, default
   :data:`STEPS_FRACTION` of the base budget) with a fresh linear warm-up (:data:`WARMUP_FRACTION` of the steps, as
   the seed study's scaffold runs: 3 %) and cosine decay, at ``--extend-lr`` (default 0.1) times the base model's
   peak rate (the papers fine-tune at a small fraction of the pre-training rate: PI and YaRN at 2e-5 after LLaMA's
   3e-4), on fresh training data (its own seeded stream) at ``F`` times the training length -- or, with ``--pose``,
   at the training length with PoSE's skipping position ids covering ``F`` times it (Zhu et al. 2023,
   arXiv:2309.10400; :mod:`pebench.engine.pose`). A method applies its factor ``F`` from the fine-tune on;
3. the **evaluation** at the training length L (what the model kept), F·L (inside the new window) and 2F·L (beyond
   it), stored at its own sweep point (``ext2x`` for ``--extend 2``, ``pose2x`` with ``--pose``), never ranked with
   the from-scratch protocol. The configuration stores the phase (:func:`phase_config`) with the base model's
   encoding and configuration hash, so the phase's models have their own keys and checkpoints, and ``--reuse``,
   currency and ``pebench rebuild`` treat them as any other.

A phase whose base model failed or diverged fails, naming the base.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import torch

from pebench import encodings
from pebench.case import Case, Point
from pebench.encodings.extension import Extension
from pebench.engine.settings import Settings
from pebench.engine.sweep import Axis, Sweep
from pebench.engine.train_config import TrainConfig
from pebench.errors import PebenchError
from pebench.tasks.base import Batch, Task

STEPS_FRACTION = 0.25
"""The fine-tune's default budget as a fraction of the base model's steps (docs/extension.md: the study behind it)."""
WARMUP_FRACTION = 0.03
"""The fine-tune's warm-up as a fraction of its steps (seed study 003's scaffold runs: 180 of 6,000 and 30 of 1,000
steps), at least one step."""
AXES = ("ext", "pose", "scaffold")
"""The names of a second phase's sweep axis: ``ext`` (fine-tuned at F·L), ``pose`` (PoSE at L covering F·L),
``scaffold`` (converted to NoPE part of the way, :mod:`pebench.engine.scaffold`)."""
STREAM = "extend"
"""The name the fine-tune's data and positions generators are seeded with (the base training's is ``train``)."""


def axis(factor: float, pose: bool = False) -> Axis:
    """The sweep axis of ``--extend factor``: one value, written ``2x`` (``ext2x``, or ``pose2x`` with PoSE), setting
    :attr:`Settings.extend <pebench.engine.settings.Settings.extend>`."""
    return Axis(AXES[1] if pose else AXES[0], "extend", "setting", "", (float(factor),), (f"{factor:g}x",))


def with_axis(sweep: Sweep, factor: float | None, pose: bool = False, scaffold: float | None = None) -> Sweep:
    """``sweep`` with the second phase's axis last: ``--extend factor``'s, or ``--scaffold``'s (``sweep`` itself
    without either)."""
    from pebench.engine import scaffold as scaffolds

    if scaffold:
        return Sweep((*sweep.axes, scaffolds.axis(scaffold)))
    return sweep if not factor else Sweep((*sweep.axes, axis(factor, pose)))


def base_point(point: Point) -> Point:
    """The point of the base models of an extension point: ``point`` without the extension axis."""
    return Point(tuple((n, v) for n, v in point.axes if n not in AXES))


def method(encoding: str) -> Extension | None:
    """The extension ``encoding`` declares (None: a control, continued unchanged)."""
    return getattr(encodings.get(encoding), "extension", None)


def base_case(case: Case, task: Task) -> Case:
    """The case of the base model ``case``'s second phase continues: its base encoding's, at the base point."""
    ext = method(case.encoding)
    return Case(ext.base if ext else case.encoding, case.task, task.train_length, case.seed, base_point(case.point))


def encoding_options(settings: Settings, encoding: str) -> dict[str, Any]:
    """The options ``encoding`` is built with under ``settings``: ``--encoding-options``'s, and in a second phase
    those its extension takes with the factor."""
    given = dict(settings.encoding_options.get(encoding, {}))
    ext = method(encoding) if settings.extend else None
    return given if ext is None else ext.phase_options(given, settings.extend)  # type: ignore[arg-type]


def base_settings(settings: Settings, case: Case) -> Settings:
    """The settings of the base model of ``case``'s second phase: no extension; a method's base encoding with those
    of the method's options that it declares."""
    ext = method(case.encoding)
    options = {k: dict(v) for k, v in settings.encoding_options.items()}
    if ext is not None:
        declared = encodings.get(ext.base).options
        mine = settings.encoding_options.get(case.encoding, {})
        options[ext.base] = {k: v for k, v in mine.items() if k in declared}
    return replace(settings, extend=None, encoding_options=options)


def phase_train_config(settings: Settings, task: Task) -> TrainConfig:
    """The fine-tune's training configuration: :func:`steps` steps, a fresh warm-up of :data:`WARMUP_FRACTION`, the
    base rate times ``extend_lr``, to the budget."""
    base = settings.train_config(task)
    n = steps(settings, task)
    return replace(base, steps=n, lr=base.lr * settings.extend_lr, warmup_steps=max(1, round(WARMUP_FRACTION * n)),
                   stop="budget")  # fmt: skip


def steps(settings: Settings, task: Task) -> int:
    """The fine-tune's steps: ``--extend-steps``, else :data:`STEPS_FRACTION` of the base budget (at least 1)."""
    if settings.extend_steps is not None:
        return settings.extend_steps
    return max(1, round(STEPS_FRACTION * settings.train_config(task).steps))


def phase_config(settings: Settings, task: Task, base_hash: str, base_encoding: str) -> dict[str, Any]:
    """The second phase as the stored configuration holds it (``config["extend"]``)."""
    cfg = phase_train_config(settings, task)
    return {"factor": settings.extend, "pose": settings.pose, "steps": cfg.steps, "lr": cfg.lr,
            "warmup_steps": cfg.warmup_steps, "length": fine_tune_length(settings, task),
            "base": {"encoding": base_encoding, "config_hash": base_hash}}  # fmt: skip


def fine_tune_length(settings: Settings, task: Task) -> int:
    """The task length the fine-tune trains at: F·L, or L with PoSE."""
    return task.train_length if settings.pose else round(settings.extend * task.train_length)  # type: ignore[operator]


def lengths(task: Task, factor: float) -> list[int]:
    """The evaluation lengths of an extension point: L, F·L and 2F·L."""
    length = task.train_length
    return sorted({length, round(factor * length), round(2 * factor * length)})


def check(task: Task, factor: float) -> None:
    """A one-line error when ``task`` cannot be fine-tuned and evaluated for ``--extend factor``: a length it cannot
    generate, or one beyond the longest that position tables are sized for (the task's :meth:`max_length`, its
    full tier's longest sequence)."""
    for n in lengths(task, factor):
        task.check_length(n)
    longest, most = task.tokens(lengths(task, factor)[-1]), task.max_length()
    if longest > most:
        raise PebenchError(
            f"--extend {factor:g} evaluates {task.name} at 2F*L = {lengths(task, factor)[-1]} ({longest} tokens), "
            f"beyond the {most} tokens that absolute position tables (learned, t5 ...) are sized for: give a factor "
            f"of at most {most // (2 * task.tokens(task.train_length))}"
        )


def draw(settings: Settings, task: Task) -> Callable[[int, torch.Generator, torch.Generator], Batch]:
    """The fine-tune's training batches (on the CPU, from the phase's generators): the task at F·L with the
    encoding's training positions; with PoSE the task at L with PoSE's positions covering F·L tokens."""
    length = fine_tune_length(settings, task)
    target = task.tokens(round(settings.extend * task.train_length))  # type: ignore[operator]

    def batch(batch_size: int, gen: torch.Generator, pos_gen: torch.Generator) -> Batch:
        b = task.sample(batch_size, length, gen, "train")
        if settings.pose:
            from pebench.engine.pose import pose_positions

            if b.positions is not None:
                raise PebenchError(f"--pose sets the position ids, which task {task.name} sets itself")
            return Batch(b.inputs, b.targets, pose_positions(batch_size, b.inputs.shape[1], target, pos_gen),
                         b.annotations)  # fmt: skip
        return b

    return batch
