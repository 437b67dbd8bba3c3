"""Run benchmark cases: build the task and encoding, train (or reuse) the model, evaluate, make the result record.

A model is identified by (encoding, task, seed, configuration). It is trained once and shared by every evaluation
length of that combination: kept in memory for the session and saved as a checkpoint keyed by a hash of its
configuration, so a later session (or another xdist worker) loads it instead of training again.
"""

from __future__ import annotations

import contextlib
import math
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from pebench import encodings, tasks
from pebench.case import Case
from pebench.encodings.base import EncodingContext
from pebench.encodings.registry import not_applicable
from pebench.engine.checkpoints import CheckpointStore
from pebench.engine.code import code_version, plugin_code
from pebench.engine.device import pick_device, resolve_precision, worker_device
from pebench.engine.evaluation import eval_positions, evaluate
from pebench.engine.fingerprint import encoding_fingerprint, task_fingerprint
from pebench.engine.packing import packable, train_packed
from pebench.engine.settings import Settings
from pebench.engine.sweep import Sweep
from pebench.engine.training import TrainInfo, train
from pebench.errors import ConfigError, PebenchError
from pebench.hashing import config_hash, derive_seed
from pebench.models import Transformer
from pebench.status import ResultStatus
from pebench.store import attention
from pebench.store.record import ResultRecord
from pebench.tasks.base import Task
from pebench.tasks.grid import GridEvaluated, cell_key

Timer = Callable[[Callable[[], Any]], Any]
"""Wraps the call that trains a model, e.g. pytest-benchmark's ``benchmark.pedantic`` (see the suite)."""

ATTENTION_TOKENS = 32
"""Length of the sequence whose last-layer attention maps are stored with the training-length result."""


@dataclass
class TrainedModel:
    model: Transformer
    info: TrainInfo
    reused: bool


@torch.no_grad()
def attention_snapshot(
    model: Transformer, task: Task, seed: int, device: torch.device, n_tokens: int = ATTENTION_TOKENS
) -> dict[str, Any]:
    """The last layer's attention on the first ``n_tokens`` tokens of one evaluation sequence, as a stored snapshot
    (:func:`pebench.store.attention.encode`).

    The sequence is drawn at the training length from the task's first evaluation split with a generator seeded
    from (seed, "attention", task, length), its positions as in evaluation
    (:func:`pebench.engine.evaluation.eval_positions`, from a generator seeded from (seed, "attention positions", task,
    length)), then both (and the task's annotations) are cut to ``n_tokens``: attention is causal, so these rows equal
    the top-left block of the full sequence's maps.
    """
    gen = torch.Generator().manual_seed(derive_seed(seed, "attention", task.name, task.train_length))
    pos_gen = torch.Generator().manual_seed(derive_seed(seed, "attention positions", task.name, task.train_length))
    batch = task.sample(1, task.train_length, gen, task.eval_splits[0])
    t = min(n_tokens, batch.inputs.shape[1])
    tokens = batch.inputs[:, :t].to(device)
    full = eval_positions(model, batch, pos_gen)
    positions = None if full is None else full[..., :t].to(device)
    notes = None if batch.annotations is None else {k: v[:, :t].to(device) for k, v in batch.annotations.items()}
    maps = model.attention_maps(tokens, positions, layer=-1, annotations=notes)[0].float().cpu()  # (H, t, t)
    return attention.encode(maps.numpy(), len(model.blocks) - 1, tokens[0].tolist())


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


class Runner:
    """Runs cases with the given settings; caches trained models in memory and on disk."""

    def __init__(
        self,
        settings: Settings,
        progress_context: Callable[[], contextlib.AbstractContextManager[Any]] | None = None,
        reuse: Callable[[ResultRecord], ResultRecord | None] | None = None,
        sweep: Sweep | None = None,
    ) -> None:
        self.device = worker_device(pick_device(settings.device))
        # --precision auto means the precision this device trains in; the configuration records the resolved one
        self.settings = replace(settings, precision=resolve_precision(settings.precision, self.device))
        self.progress_context = progress_context
        # ``reuse(record)`` gets a new record's identity (config hash, versions, seed, length) before training and
        # returns a finished record to use instead, or None (see pebench.store.reuse.ReuseLookup)
        self.reuse = reuse
        self.run_hook: Callable[[Case, Timer | None], ResultRecord | None] | None = None
        """When set, :meth:`run` first hands it the case; a record it returns is the case's result (the suite's
        ``--lr-halving``, :mod:`pebench.suite.halving`)."""
        self._models: dict[str, TrainedModel] = {}
        self.failed_models: dict[str, str] = {}
        """Model key -> why its training failed elsewhere (e.g. on Ray): its cases are recorded as errors."""
        self._tasks: dict[str, Task] = {}
        self.sweep = sweep or Sweep()
        """The run's ``--sweep`` (:mod:`pebench.engine.sweep`): a case at a sweep point runs on :meth:`at` its
        point, whose settings carry the point's values."""
        self._at: dict[str, Runner] = {}

    def at(self, point: str) -> Runner:
        """The runner of sweep point ``point`` (this one for ``""``): these settings with the point's values, the
        same progress display, reuse lookup and record of failed models."""
        if not point or not self.sweep:
            return self
        if point not in self._at:
            child = Runner(self.sweep.settings(self.settings, point), self.progress_context, self.reuse)
            child.failed_models = self.failed_models
            self._at[point] = child
        child = self._at[point]
        child.progress_context, child.reuse = self.progress_context, self.reuse
        return child

    # -- building ----------------------------------------------------------------------------------------------
    def task(self, name: str) -> Task:
        if name not in self._tasks:
            self._tasks[name] = tasks.build(name, self.settings.task_options.get(name))
        return self._tasks[name]

    def not_applicable(self, encoding: str, task: str) -> str | None:
        """Why ``encoding`` cannot run on ``task`` as one line (it needs task annotations the task does not
        provide, :func:`pebench.encodings.registry.not_applicable`); None when it can."""
        return not_applicable(encoding, self.task(task))

    def check_applicable(self, case: Case) -> None:
        """Raise :class:`~pebench.errors.ConfigError` with the one-line reason when ``case``'s encoding cannot run
        on its task (the suite skips such cases; building one directly is an error)."""
        reason = self.not_applicable(case.encoding, case.task)
        if reason is not None:
            raise ConfigError(case.id, reason)

    def encoding_context(self, task: Task, encoding: str | None = None) -> EncodingContext:
        cfg = self.settings.model_config(task, encoding)  # the sizes at the settings' scale
        return EncodingContext(
            d_model=cfg.d_model, n_heads=cfg.n_heads, n_layers=cfg.n_layers, max_len=task.max_length(),
            train_length=task.train_length,
        )

    def describe(self, case: Case, training: bool = False) -> dict[str, Any]:
        """The full configuration of ``case`` (without seed and length) -- stored with the result and hashed.

        ``training``: the configuration of the case's trained model, i.e. with every evaluation-only encoding option
        (:attr:`pebench.options.Option.eval_only`) at its default and every evaluation-only task option left out."""
        if (runner := self.at(case.point)) is not self:
            return runner.describe(case, training)
        task = self.task(case.task)
        enc_cls = encodings.get(case.encoding)
        ctx = self.encoding_context(task, case.encoding)
        given = self.settings.encoding_options.get(case.encoding, {})
        if training:
            given = {k: v for k, v in given.items() if not (k in enc_cls.options and enc_cls.options[k].eval_only)}
        probe = enc_cls(ctx, **given)
        task_config = task.config()
        if training:  # evaluation-only task options (lm's eval windows) do not change the trained model
            task_config["options"] = {k: v for k, v in task_config["options"].items()
                                      if not (k in task.options and task.options[k].eval_only)}  # fmt: skip
        return {
            "encoding": {
                "name": case.encoding,
                "version": enc_cls.version,
                "options": probe.opts,
                **probe.extra_config(),
            },
            "task": task_config,
            "model": self.settings.model_config(task, case.encoding).to_dict(),
            "max_len": ctx.max_len,
            "train": self.settings.train_config(task).to_dict(),
            "eval": {"samples": self.settings.eval_samples},
        }

    def model_key(self, case: Case) -> str:
        """The identity of the trained model of ``case``: its training configuration (without evaluation settings
        and evaluation-only options, see :meth:`describe`) and seed; for a plugin's encoding or task also its source
        (:func:`plugin_code`), so an edited plugin trains anew instead of loading an older checkpoint."""
        if (runner := self.at(case.point)) is not self:
            return runner.model_key(case)
        config = self.describe(case, training=True)
        key = {k: v for k, v in config.items() if k != "eval"} | {"seed": case.seed}
        code = plugin_code(encodings.get(case.encoding), type(self.task(case.task)))
        return config_hash(key | {"plugin_code": code} if code else key)

    @property
    def checkpoints(self) -> CheckpointStore:
        """The checkpoint store of the cache directory (:attr:`Settings.cache_dir`; None: no disk cache)."""
        return CheckpointStore(self.settings.cache_dir)

    def checkpoint_path(self, case: Case, key: str) -> Path | None:
        return self.at(case.point).checkpoints.path(case, key)

    def session_cache(self) -> Path:
        """The checkpoint directory, a new temporary one for this runner when the settings have none (``--no-cache``
        with an executor that hands checkpoints back through the disk cache)."""
        if self.settings.cache_dir is None:
            self.settings = replace(self.settings, cache_dir=Path(tempfile.mkdtemp(prefix="pebench-session-")))
            for child in self._at.values():  # sweep points share it
                child.settings = replace(child.settings, cache_dir=self.settings.cache_dir)
        return self.settings.cache_dir

    def model_for(self, case: Case, config: dict[str, Any], timer: Timer | None = None) -> TrainedModel:
        """The trained model of (encoding, task, seed, config): from memory, from a checkpoint, or trained now
        (through ``timer`` when given)."""
        if (runner := self.at(case.point)) is not self:
            return runner.model_for(case, config, timer)
        key = self.model_key(case)
        if key in self._models:
            return replace(self._models[key], reused=True)
        if key in self.failed_models:
            raise RuntimeError(self.failed_models[key])
        task = self.task(case.task)
        model = self.build_model(case)
        if self.settings.pack_seeds > 1 and packable(model):
            return self._packed_model_for(case, config, timer)
        path = self.checkpoint_path(case, key)
        # one process trains a model; another that needs it meanwhile waits here and loads the checkpoint
        with self.checkpoints.locked([path]):
            trained = self._load_checkpoint(path, model)
            if trained is None:

                def do_train() -> TrainInfo:
                    return train(model, task, self.settings.train_config(task), seed=case.seed, device=self.device,
                                 progress=self.settings.progress, progress_context=self.progress_context,
                                 description=case.model_id(seeded=True))  # fmt: skip

                info = do_train() if timer is None else timer(do_train)
                trained = TrainedModel(model, info, reused=False)
                self.checkpoints.save(path, model, info, config)
        self._models[key] = trained
        return trained

    def build_model(self, case: Case) -> Transformer:
        """The untrained model of ``case``, initialised from its seed (the same weights however it is trained)."""
        if (runner := self.at(case.point)) is not self:
            return runner.build_model(case)
        self.check_applicable(case)
        task = self.task(case.task)
        torch.manual_seed(case.seed)
        encoding = encodings.build(
            case.encoding, self.encoding_context(task, case.encoding), self.settings.encoding_options.get(case.encoding)
        )
        return Transformer(self.settings.model_config(task, case.encoding), encoding)

    def _packed_model_for(self, case: Case, config: dict[str, Any], timer: Timer | None) -> TrainedModel:
        """:meth:`model_for` with packed seeds: the model of every seed 0..K-1 of this (encoding, task, config) that
        is neither in memory nor in a checkpoint is trained now, all together (:mod:`pebench.engine.packing`)."""
        cases = [replace(case, seed=s) for s in range(self.settings.pack_seeds)]
        keys = [self.model_key(c) for c in cases]
        paths = [self.checkpoint_path(c, k) for c, k in zip(cases, keys, strict=True)]
        with self.checkpoints.locked(paths):  # every seed's lock, always in seed order (no deadlock)
            missing = []
            for c, key, path in zip(cases, keys, paths, strict=True):
                if key not in self._models:
                    trained = self._load_checkpoint(path, self.build_model(c))
                    if trained is None:
                        missing.append((c, key, path))
                    else:
                        self._models[key] = trained
            if missing:
                task = self.task(case.task)
                models = [self.build_model(c) for c, _, _ in missing]

                def do_train() -> list[TrainInfo]:
                    return train_packed(models, task, self.settings.train_config(task), [c.seed for c, _, _ in missing],
                                        self.device, progress=self.settings.progress,
                                        progress_context=self.progress_context,
                                        description=f"{case.encoding}-{case.task}")  # fmt: skip

                infos = do_train() if timer is None else timer(do_train)
                for (_, key, path), model, info in zip(missing, models, infos, strict=True):
                    self.checkpoints.save(path, model, info, config)
                    self._models[key] = TrainedModel(model, info, reused=False)
        return self._models[self.model_key(case)]

    def _load_checkpoint(self, path: Path | None, model: Transformer) -> TrainedModel | None:
        """The model trained earlier and saved at ``path`` (:meth:`CheckpointStore.load`), on this device; None."""
        info = self.checkpoints.load(path, model)
        return None if info is None else TrainedModel(model.to(self.device).eval(), info, reused=True)

    # -- running -----------------------------------------------------------------------------------------------
    def new_record(self, case: Case) -> ResultRecord:
        """The record of ``case`` before training: its identity (configuration, hash, versions, code version and
        behavioural fingerprints, :mod:`pebench.engine.fingerprint`), as ``--reuse`` looks it up."""
        task = self.task(case.task)
        enc_cls = encodings.get(case.encoding)
        config = self.describe(case)
        enc_fp, task_fp = encoding_fingerprint(case.encoding, config["encoding"]["options"]), task_fingerprint(task)
        return ResultRecord(
            case_id=case.id,
            point=case.point,
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
            encoding_fingerprint=enc_fp["digest"],
            task_fingerprint=task_fp["digest"],
            fingerprints=[enc_fp, task_fp],
            metric=task.metric,
            higher_is_better=task.higher_is_better,
            chance_level=task.chance_level,
        )

    def run(self, case: Case, timer: Timer | None = None) -> ResultRecord:
        """Train (or reuse) and evaluate ``case``; never raises for a training failure -- the record says so.
        ``timer`` wraps the training call when this case trains its model. A case whose encoding cannot run on its
        task (:meth:`check_applicable`) raises :class:`~pebench.errors.ConfigError`."""
        if self.run_hook is not None and (hooked := self.run_hook(case, timer)) is not None:
            return hooked
        if (runner := self.at(case.point)) is not self:
            return runner.run(case, timer)
        self.check_applicable(case)
        self.task(case.task).check_length(case.length)
        record = self.new_record(case)
        if self.reuse is not None:
            earlier = self.reuse(record)
            if earlier is not None:
                return earlier
        try:
            trained = self.model_for(case, record.config, timer)
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
            else:
                self._evaluate_into(record, trained.model, info, case)
        except PebenchError:
            raise
        except Exception as err:  # recorded, then reported as a failed case by the suite
            record.status = ResultStatus.ERROR
            record.message = f"{type(err).__name__}: {err}"
            record.metrics = {"traceback": traceback.format_exc(limit=20)}
        return record

    def _evaluate_into(self, record: ResultRecord, model: Transformer, info: TrainInfo, case: Case) -> None:
        """Evaluate the trained ``model`` of ``case`` on every evaluation split of its task into ``record``: the
        first split's loss, accuracies and score, every split's metrics, the task's grid cells at this length
        (:func:`evaluate_grid`), the stop reason, the packing, and at the training length the attention snapshot."""
        task = self.task(case.task)
        s = self.settings
        start = time.perf_counter()
        splits = {split: evaluate(model, task, case.length, split, s.eval_samples, case.seed, self.device,
                                  s.eval_batch_size) for split in task.eval_splits}  # fmt: skip
        grid = evaluate_grid(model, task, case.length, splits, s.eval_samples, case.seed, self.device,
                             s.eval_batch_size)  # fmt: skip
        record.eval_time_s = time.perf_counter() - start
        main = splits[task.eval_splits[0]]
        record.loss = main["loss"]
        record.token_accuracy = main["token_accuracy"]
        record.sequence_accuracy = main["sequence_accuracy"]
        record.score = task.score(main)
        record.metrics = {"splits": splits}
        if grid is not None:  # the task's grid cells (addition's operand-length pairs with grid=true)
            record.metrics["grid"] = grid
        record.metrics["stop_reason"] = str(info.stop_reason)  # the value: learned | plateau | budget | diverged
        if info.packed_with > 1:
            record.metrics["packed_with"] = info.packed_with  # trained together with this many seeds
        if not math.isfinite(main["loss"]):
            record.status = ResultStatus.DIVERGED
            record.message = f"non-finite evaluation loss at length {case.length}"
        elif case.length == task.train_length:
            record.metrics["attention"] = attention_snapshot(model, task, case.seed, self.device)
