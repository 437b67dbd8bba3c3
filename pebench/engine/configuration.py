"""A case's configuration, as pure functions of the settings and the case: what its encoding and task are built with
and :func:`describe`, the configuration stored with each result and hashed into its ``config_hash``.

It sits below the store and the analysis (nothing here reads a database or trains), so that the currency of a stored
result (:mod:`pebench.engine.currency`: is its configuration the one this pebench builds for its case?) can be judged
wherever results are read. :mod:`pebench.engine.identity` builds a case's model key and record from it.
"""

from __future__ import annotations

from typing import Any

from pebench import encodings, tasks
from pebench.case import Case
from pebench.encodings.base import EncodingContext
from pebench.engine import extension, scaffold
from pebench.engine.settings import Settings
from pebench.hashing import config_hash
from pebench.tasks.base import Task


def build_task(settings: Settings, name: str) -> Task:
    """Task ``name`` with its options from ``settings`` (``--task-options``, or a sweep point's)."""
    return tasks.build(name, settings.task_options.get(name))


def encoding_context(settings: Settings, task: Task, encoding: str | None = None) -> EncodingContext:
    """What an encoding of ``task``'s models is built with: the model's sizes at the settings' scale (and
    ``encoding``'s own depth), the task's longest sequence and its training length."""
    cfg = settings.model_config(task, encoding)
    return EncodingContext(d_model=cfg.d_model, n_heads=cfg.n_heads, n_layers=cfg.n_layers, max_len=task.max_length(),
                           train_length=task.train_length)  # fmt: skip


def describe(settings: Settings, task: Task, case: Case, training: bool = False) -> dict[str, Any]:
    """The full configuration of ``case`` (without seed and length) -- stored with the result and hashed.

    ``task``: ``case.task`` built with ``settings`` (:func:`build_task`). ``training``: the configuration of the
    case's trained model, i.e. with every evaluation-only encoding option (:attr:`pebench.options.Option.eval_only`)
    at its default and every evaluation-only task option left out."""
    enc_cls = encodings.get(case.encoding)
    ctx = encoding_context(settings, task, case.encoding)
    given = extension.encoding_options(settings, case.encoding)
    if training:
        given = {k: v for k, v in given.items() if not (k in enc_cls.options and enc_cls.options[k].eval_only)}
    probe = enc_cls(ctx, **given)
    task_config = task.config()
    if training:  # evaluation-only task options (lm's eval windows) do not change the trained model
        task_config["options"] = {k: v for k, v in task_config["options"].items()
                                  if not (k in task.options and task.options[k].eval_only)}  # fmt: skip
    config = {
        "encoding": {"name": case.encoding, "version": enc_cls.version, "options": probe.opts, **probe.extra_config()},
        "task": task_config,
        "model": settings.model_config(task, case.encoding).to_dict(),
        "max_len": ctx.max_len,
        "train": settings.train_config(task).to_dict(),
        "eval": {"samples": settings.eval_samples},
    }
    if settings.extend:  # a second phase: the fine-tune and the base model it continues (its training configuration)
        base = extension.base_case(case, task)
        base_config = describe(extension.base_settings(settings, case), task, base, training=True)
        base_hash = config_hash({k: v for k, v in base_config.items() if k != "eval"})
        config["extend"] = extension.phase_config(settings, task, base_hash, base.encoding)
    if settings.scaffold:  # converted to NoPE part of the way (pebench.engine.scaffold)
        config["scaffold"] = scaffold.config(settings, task)
    return config
