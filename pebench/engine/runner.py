"""Run benchmark cases: a case's record from its identity, its trained model and its evaluation.

The :class:`Runner` holds what a run shares: the device, the reuse lookup, the sweep and one model cache per sweep
point (:class:`~pebench.engine.cache.ModelCache`, built once from the point's settings). The pieces it runs a case
with are its own modules: the identity of a case (:mod:`pebench.engine.identity`), its trained model
(:mod:`pebench.engine.cache`), its evaluation (:func:`pebench.engine.evaluation.evaluate_case`); this module writes
their results into the record.
"""

from __future__ import annotations

import contextlib
import math
import tempfile
import traceback
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from pebench.case import Case, Point
from pebench.encodings.registry import not_applicable
from pebench.engine import extension
from pebench.engine.cache import ModelCache, Timer, TrainedModel
from pebench.engine.device import pick_device, resolve_precision, worker_device
from pebench.engine.diagnostics import case_diagnostics
from pebench.engine.evaluation import ATTENTION_TOKENS, CaseScores, attention_maps, evaluate_case
from pebench.engine.identity import (
    add_fingerprints,
    check_applicable,
    describe,
    identity_record,
    new_record,
    partial_config,
)
from pebench.engine.settings import Settings
from pebench.engine.sweep import Sweep
from pebench.engine.training import TrainInfo
from pebench.errors import PebenchError
from pebench.models import Transformer
from pebench.records import attention
from pebench.records.record import ResultRecord
from pebench.status import ResultStatus
from pebench.tasks.base import Task


def attention_snapshot(
    model: Transformer, task: Task, seed: int, device: torch.device, n_tokens: int = ATTENTION_TOKENS
) -> dict[str, Any]:
    """The stored snapshot (:func:`pebench.records.attention.encode`) of ``model``'s last-layer attention on one
    evaluation sequence of ``task`` (:func:`pebench.engine.evaluation.attention_maps`)."""
    return attention.encode(*attention_maps(model, task, seed, device, n_tokens))


class Runner:
    """Runs cases with the given settings at the points of ``sweep``; caches trained models in memory and on disk.

    ``reuse(record)`` gets a new record's identity (config hash, versions, seed, length) before training and returns
    a finished record to use instead, or None (:class:`pebench.store.reuse.ReuseLookup`); ``progress_context`` is
    the training's progress display (both may be set later, as the suite does)."""

    def __init__(self, settings: Settings, progress_context: Callable[[], contextlib.AbstractContextManager[Any]]
                 | None = None, reuse: Callable[[ResultRecord], ResultRecord | None] | None = None,
                 sweep: Sweep | None = None) -> None:  # fmt: skip
        self.device = worker_device(pick_device(settings.device))
        self.progress_context = progress_context
        self.reuse = reuse
        self.sweep = sweep or Sweep()
        """The run's ``--sweep`` (:mod:`pebench.engine.sweep`): a case runs with its point's settings."""
        self.failed_models: dict[str, str] = {}
        """Model key -> why its training failed elsewhere (e.g. on Ray): its cases are recorded as errors."""
        self._caches = {Point(): ModelCache(self._resolved(settings), self.device, self.failed_models)}

    def _resolved(self, settings: Settings) -> Settings:
        # --precision auto means the precision this device trains in; the configuration records the resolved one
        return replace(settings, precision=resolve_precision(settings.precision, self.device))

    @property
    def settings(self) -> Settings:
        """The run's settings (``--precision auto`` resolved for :attr:`device`)."""
        return self._caches[Point()].settings

    def models(self, point: Point = Point()) -> ModelCache:  # noqa: B008 -- a Point is immutable
        """The model cache of sweep point ``point`` (the run's for ``Point()`` or without a sweep), built on first
        use from the run's settings with the point's values; it shares the progress display and the failed
        models."""
        point = point if self.sweep else Point()
        if point not in self._caches:
            settings = self._resolved(self.sweep.settings(self.settings, point))
            self._caches[point] = ModelCache(settings, self.device, self.failed_models)
            if settings.extend or settings.scaffold:  # a second phase continues the point's models without its axis
                self._caches[point].base = self.models(extension.base_point(point))
        self._caches[point].progress_context = self.progress_context
        return self._caches[point]

    def task(self, name: str, point: Point = Point()) -> Task:  # noqa: B008 -- a Point is immutable
        """Task ``name`` with the settings of sweep point ``point``, built once."""
        return self.models(point).task(name)

    def not_applicable(self, encoding: str, task: str) -> str | None:
        """Why ``encoding`` cannot run on ``task`` as one line (:func:`pebench.encodings.registry.not_applicable`)."""
        return not_applicable(encoding, self.task(task))

    def describe(self, case: Case, training: bool = False) -> dict[str, Any]:
        """``case``'s configuration at its point (:func:`pebench.engine.identity.describe`)."""
        models = self.models(case.point)
        return describe(models.settings, models.task(case.task), case, training)

    def model_key(self, case: Case) -> str:
        """The key of ``case``'s trained model (:func:`pebench.engine.identity.model_key`)."""
        return self.models(case.point).model_key(case)

    def new_record(self, case: Case) -> ResultRecord:
        """``case``'s record before training (:func:`pebench.engine.identity.new_record`)."""
        models = self.models(case.point)
        return new_record(models.settings, models.task(case.task), case)

    def build_model(self, case: Case) -> Transformer:
        """The untrained model of ``case`` (:meth:`pebench.engine.cache.ModelCache.build_model`)."""
        return self.models(case.point).build_model(case)

    def session_cache(self) -> Path:
        """The checkpoint directory, a new temporary one for this run when the settings have none (``--no-cache``
        with an executor that hands checkpoints back through the disk cache), shared by every sweep point."""
        if self.settings.cache_dir is None:
            directory = Path(tempfile.mkdtemp(prefix="pebench-session-"))
            for models in self._caches.values():
                models.settings = replace(models.settings, cache_dir=directory)
        return self.settings.cache_dir  # type: ignore[return-value]

    def run(self, case: Case, timer: Timer | None = None) -> ResultRecord:
        """Train (or reuse) and evaluate ``case``. Never raises for a failure of the case's own code -- building its
        configuration, its encoding's behavioural probe, training, evaluation, recording the scores: the record says
        so (:func:`record_failure`), with what identity could be built. ``timer`` wraps the training call when this
        case trains its model. A case whose encoding cannot run on its task
        (:func:`~pebench.engine.identity.check_applicable`), or any other :class:`~pebench.errors.PebenchError`
        (a user's setting), raises."""
        models = self.models(case.point)
        task = models.task(case.task)
        check_applicable(task, case)
        task.check_length(case.length)
        record = _identity(models.settings, task, case)
        if record.status == ResultStatus.ERROR:
            return record
        if self.reuse is not None and (earlier := self.reuse(record)) is not None:
            return earlier
        where = "in training"
        try:
            trained = models.model_for(case, record.config, timer)
            _record_training(record, trained)
            if trained.info.status == ResultStatus.OK:
                where, s = "in evaluation", models.settings
                scores = evaluate_case(trained.model, task, case.length, case.seed, self.device, s.eval_samples,
                                       s.eval_batch_size)  # fmt: skip
                where = "while recording its scores"
                _record_scores(record, scores, trained)
                _record_base(record, models.bases.get(models.model_key(case)))
                if s.diagnostics and record.status == ResultStatus.OK:
                    where = "in its diagnostics"
                    record.metrics |= case_diagnostics(trained.model, task, case.length, case.seed)
        except PebenchError:
            raise
        except Exception as err:  # recorded, then reported as a failed case by the suite
            record_failure(record, where, err)
        return record


def record_failure(record: ResultRecord, where: str, err: BaseException) -> ResultRecord:
    """Mark ``record`` failed (status ``error``) by ``err``, raised ``where`` (``"in training"``); its message is one
    line naming the encoding, the task, where and the exception (``TypeName: text``), ``metrics`` holds only the
    traceback (its innermost frames; call this in the ``except`` block). Returns ``record``."""
    text = " ".join(line.strip() for line in str(err).splitlines() if line.strip())
    record.status = ResultStatus.ERROR
    record.message = f"{record.encoding} on {record.task} failed {where}: {type(err).__name__}" + \
        (f": {text}" if text else "")  # fmt: skip
    record.metrics = {"traceback": traceback.format_exc(limit=-TRACEBACK_FRAMES)}
    return record


TRACEBACK_FRAMES = 30
"""The innermost frames of a failed case's stored traceback (the raising line of a plugin's hook among them)."""


def _identity(settings: Settings, task: Task, case: Case) -> ResultRecord:
    """``case``'s record before training (:func:`pebench.engine.identity.new_record`); when its encoding fails in
    building its configuration or in the behavioural probe, that failure's record (:func:`record_failure`) with what
    identity could be built: the configuration (or :func:`~pebench.engine.identity.partial_config`), its hash, the
    versions and code version, no fingerprints."""
    try:
        record = identity_record(settings, task, case)
    except PebenchError:
        raise
    except Exception as err:
        partial = identity_record(settings, task, case, partial_config(task, case))
        return record_failure(partial, "building its configuration", err)
    try:
        add_fingerprints(record, task)
    except PebenchError:
        raise
    except Exception as err:
        record_failure(record, "in the behavioural probe", err)
    return record


def _record_training(record: ResultRecord, trained: TrainedModel) -> None:
    """What training gave into ``record``: steps, time, throughput, final loss, curve, whether the model was reused;
    for a training that did not end well, its status, message and stop reason."""
    info = trained.info
    record.train_steps = info.steps
    record.train_time_s = info.wall_time_s
    record.tokens_per_s = info.tokens_per_s
    record.final_train_loss = info.final_loss if math.isfinite(info.final_loss) else None
    record.model_reused = trained.reused
    record.curve = info.curve
    if info.status != ResultStatus.OK:
        record.status, record.message = info.status, info.message
        record.metrics = {"stop_reason": str(info.stop_reason)}  # its value, a plain string


def _record_base(record: ResultRecord, base: tuple[str, TrainInfo] | None) -> None:
    """A second phase's base model into ``record``'s metrics: its id, steps and training time (the phase's own are
    the record's)."""
    if base is not None:
        name, info = base
        record.metrics["base_model"] = {"id": name, "steps": info.steps, "train_time_s": info.wall_time_s}


def _record_scores(record: ResultRecord, scores: CaseScores, trained: TrainedModel) -> None:
    """The evaluation into ``record``: the first split's loss, accuracies and score, every split's metrics, the grid
    cells, the stop reason, the packing, the attention snapshot; a non-finite loss marks the case diverged."""
    main, info = scores.main, trained.info
    record.eval_time_s = scores.seconds
    record.loss = main["loss"]
    record.token_accuracy = main["token_accuracy"]
    record.sequence_accuracy = main["sequence_accuracy"]
    record.score = scores.score
    record.metrics = {"splits": scores.splits}
    if scores.grid is not None:  # the task's grid cells (addition's operand-length pairs with grid=true)
        record.metrics["grid"] = scores.grid
    record.metrics["stop_reason"] = str(info.stop_reason)  # the value: learned | plateau | budget | diverged
    if info.packed_with > 1:
        record.metrics["packed_with"] = info.packed_with  # trained together with this many seeds
    if not math.isfinite(main["loss"]):
        record.status = ResultStatus.DIVERGED
        record.message = f"non-finite evaluation loss at length {record.eval_length}"
    elif scores.attention is not None:
        record.metrics["attention"] = attention.encode(*scores.attention)
