"""A case's identity, as pure functions of the settings and the case: its configuration, the key of its trained
model, and its record before anything trains.

:func:`describe` is the configuration stored with a result and hashed into its ``config_hash``; :func:`model_key`
names the trained model shared by every evaluation length of an (encoding, task, seed, configuration) -- the key of
the in-memory cache and of the checkpoint file (:mod:`pebench.engine.cache`); :func:`new_record` is the record
``--reuse`` looks up before training (:func:`identity_record` and :func:`add_fingerprints` its two parts: a case whose
encoding fails in the probe is recorded with the first only). The settings are the run's or one sweep point's
(:meth:`pebench.engine.sweep.Sweep.settings`); the task is the case's task built with them (:func:`build_task`; the
model cache builds each once and passes it in). Nothing here trains, loads or keeps state, so the same settings and
case always give the same identity, in any process.
"""

from __future__ import annotations

from typing import Any

from pebench import encodings
from pebench.case import Case
from pebench.encodings.registry import not_applicable
from pebench.engine.code import code_version, plugin_code
from pebench.engine.configuration import build_task, describe, encoding_context  # noqa: F401  (re-exported)
from pebench.engine.fingerprint import encoding_fingerprint, task_fingerprint
from pebench.engine.settings import Settings
from pebench.errors import ConfigError
from pebench.hashing import config_hash
from pebench.records.record import ResultRecord
from pebench.tasks.base import Task


def check_applicable(task: Task, case: Case) -> None:
    """Raise :class:`~pebench.errors.ConfigError` with the one-line reason when ``case``'s encoding cannot run on
    ``task`` (it needs task annotations the task does not provide, :func:`pebench.encodings.registry.not_applicable`;
    the suite skips such cases, building or running one directly is an error)."""
    reason = not_applicable(case.encoding, task)
    if reason is not None:
        raise ConfigError(case.id, reason)


def model_key(settings: Settings, task: Task, case: Case) -> str:
    """The identity of the trained model of ``case``: its training configuration (without evaluation settings and
    evaluation-only options, :func:`describe` with ``training``) and seed; for a plugin's encoding or task also its
    source (:func:`~pebench.engine.code.plugin_code`), so an edited plugin trains anew instead of loading an older
    checkpoint."""
    config = describe(settings, task, case, training=True)
    key = {k: v for k, v in config.items() if k != "eval"} | {"seed": case.seed}
    code = plugin_code(encodings.get(case.encoding), type(task))
    return config_hash(key | {"plugin_code": code} if code else key)


def new_record(settings: Settings, task: Task, case: Case) -> ResultRecord:
    """The record of ``case`` before training: its identity (configuration, hash, versions, code version and
    behavioural fingerprints, :mod:`pebench.engine.fingerprint`), as ``--reuse`` looks it up."""
    record = identity_record(settings, task, case)
    add_fingerprints(record, task)
    return record


def identity_record(settings: Settings, task: Task, case: Case, config: dict[str, Any] | None = None
                    ) -> ResultRecord:  # fmt: skip
    """The record of ``case`` before training without its behavioural fingerprints (:func:`add_fingerprints` adds
    them): what a case whose encoding fails in the probe is stored with. ``config``: :func:`describe`'s unless given
    (:func:`partial_config` for a case whose configuration cannot be built)."""
    enc_cls = encodings.get(case.encoding)
    config = describe(settings, task, case) if config is None else config
    return ResultRecord(
        case_id=case.id,
        point=str(case.point),
        axes=case.point.stored(),
        encoding=case.encoding,
        encoding_version=enc_cls.version,
        task=case.task,
        task_version=task.version,
        train_length=task.train_length,
        eval_length=case.length,
        seed=case.seed,
        config=config,
        config_hash=config_hash(config),
        code_version=code_version(enc_cls, type(task)),
        metric=task.metric,
        higher_is_better=task.higher_is_better,
        chance_level=task.chance_level,
    )


def partial_config(task: Task, case: Case) -> dict[str, Any]:
    """What can be said of ``case``'s configuration when :func:`describe` fails (an encoding that cannot be built
    with its options): the encoding's name and version, and the task's configuration."""
    return {"encoding": {"name": case.encoding, "version": encodings.get(case.encoding).version}, "task": task.config()}


def add_fingerprints(record: ResultRecord, task: Task) -> None:
    """Compute ``record``'s behavioural fingerprints (its encoding's probe with its options, its task's data digest)
    and set them on it; raises what the encoding raises in the probe, leaving ``record`` without them."""
    enc_fp = encoding_fingerprint(record.encoding, record.config["encoding"]["options"])
    task_fp = task_fingerprint(task)
    record.encoding_fingerprint, record.task_fingerprint = enc_fp["digest"], task_fp["digest"]
    record.fingerprints = [enc_fp, task_fp]
