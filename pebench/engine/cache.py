"""The trained models of one settings (a run's, or one sweep point's): kept in memory, saved to and loaded from the
checkpoint store, or trained now -- alone, or with the model's other seeds packed into one batched model.

A model is identified by its key (:func:`pebench.engine.identity.model_key`: the training configuration and seed).
It is trained once and shared by every evaluation length of its (encoding, task, seed, configuration): kept in
memory for the session and saved as a checkpoint named by the key
(:class:`~pebench.engine.checkpoints.CheckpointStore`), so a later session, or another process of this one (an xdist
worker, a Ray task), loads it instead of training it again. One process trains a model while another that needs it
waits on the checkpoint's lock, then loads it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from pebench import encodings
from pebench.case import Case
from pebench.engine import extension, scaffold
from pebench.engine.checkpoints import CheckpointStore
from pebench.engine.identity import build_task, check_applicable, describe, encoding_context, model_key
from pebench.engine.packing import packable, train_packed
from pebench.engine.settings import Settings
from pebench.engine.training import TrainInfo, train
from pebench.hashing import config_hash
from pebench.models import Transformer
from pebench.tasks.base import Task

Timer = Callable[[Callable[[], Any]], Any]
"""Wraps the call that trains a model, e.g. pytest-benchmark's ``benchmark.pedantic`` (see the suite)."""


@dataclass
class TrainedModel:
    """A trained model, what its training produced, and whether it was had without training (from memory or a
    checkpoint)."""

    model: Transformer
    info: TrainInfo
    reused: bool


class ModelCache:
    """The trained models of ``settings`` on ``device``: in memory, in the checkpoint store of
    :attr:`Settings.cache_dir <pebench.engine.settings.Settings.cache_dir>`, or trained now (:meth:`model_for`).

    ``failed``: model key -> why its training failed elsewhere (e.g. on Ray), shared with the runner; such a model
    is never trained here, asking for it raises with that reason. :attr:`progress_context` is handed to the training
    loop (the suite's progress display past pytest's capture)."""

    def __init__(self, settings: Settings, device: torch.device, failed: dict[str, str] | None = None) -> None:
        self.settings = settings
        self.device = device
        self.failed = {} if failed is None else failed
        self.progress_context: Callable[[], contextlib.AbstractContextManager[Any]] | None = None
        self._models: dict[str, TrainedModel] = {}
        self._tasks: dict[str, Task] = {}
        self.base: ModelCache | None = None
        """With :attr:`Settings.extend <pebench.engine.settings.Settings.extend>`: the cache of the base models this
        second phase continues (the run's at the point without the extension axis; set by the runner)."""
        self.bases: dict[str, tuple[str, TrainInfo]] = {}
        """Model key of a second phase -> (its base model's id, that model's training info)."""

    def task(self, name: str) -> Task:
        """Task ``name`` with these settings' options, built once (:func:`~pebench.engine.identity.build_task`)."""
        if name not in self._tasks:
            self._tasks[name] = build_task(self.settings, name)
        return self._tasks[name]

    def model_key(self, case: Case) -> str:
        """The key of ``case``'s trained model with these settings (:func:`pebench.engine.identity.model_key`)."""
        return model_key(self.settings, self.task(case.task), case)

    @property
    def checkpoints(self) -> CheckpointStore:
        """The checkpoint store of the cache directory (:attr:`Settings.cache_dir`; None: no disk cache)."""
        return CheckpointStore(self.settings.cache_dir)

    def build_model(self, case: Case) -> Transformer:
        """The untrained model of ``case``, initialised from its seed (the same weights however it is trained); a
        case whose encoding cannot run on its task raises :class:`~pebench.errors.ConfigError`."""
        task = self.task(case.task)
        check_applicable(task, case)
        torch.manual_seed(case.seed)
        encoding = encodings.build(case.encoding, encoding_context(self.settings, task, case.encoding),
                                   extension.encoding_options(self.settings, case.encoding))  # fmt: skip
        return Transformer(self.settings.model_config(task, case.encoding), encoding)

    def model_for(self, case: Case, config: dict[str, Any], timer: Timer | None = None) -> TrainedModel:
        """The trained model of ``case``: from memory, from a checkpoint, or trained now (through ``timer`` when
        given; with :attr:`Settings.pack_seeds` above 1 together with its other seeds, :meth:`_packed_model_for`).
        ``config``: the case's configuration, saved with the checkpoint."""
        key = self.model_key(case)
        if key in self._models:
            return replace(self._models[key], reused=True)
        if key in self.failed:
            raise RuntimeError(self.failed[key])
        model = self.build_model(case)
        if self.settings.extend:
            return self._extended_model_for(case, key, model, config, timer)
        if self.settings.scaffold:
            return self._scaffold_model_for(case, key, config, timer)
        if self.settings.pack_seeds > 1 and packable(model):
            return self._packed_model_for(case, config, timer)
        path = self.checkpoints.path(case, key)
        # one process trains a model; another that needs it meanwhile waits here and loads the checkpoint
        with self.checkpoints.locked([path]):
            trained = self._load_checkpoint(path, model)
            if trained is None:
                task = self.task(case.task)

                def do_train() -> TrainInfo:
                    return train(model, task, self.settings.train_config(task), seed=case.seed, device=self.device,
                                 progress=self.settings.progress, progress_context=self.progress_context,
                                 description=case.model_id(seeded=True))  # fmt: skip

                info = do_train() if timer is None else timer(do_train)
                trained = TrainedModel(model, info, reused=False)
                self.checkpoints.save(path, model, info, config)
        self._models[key] = trained
        return trained

    def _extended_model_for(self, case: Case, key: str, model: Transformer, config: dict[str, Any],
                            timer: Timer | None) -> TrainedModel:  # fmt: skip
        """:meth:`model_for` of a second phase (:mod:`pebench.engine.extension`): the base model from :attr:`base`
        (from memory, a checkpoint, or trained now, outside ``timer``), its weights copied into ``model`` and
        fine-tuned (through ``timer``)."""
        assert self.base is not None, "a second phase's cache has its base models' cache (the runner sets it)"
        task = self.task(case.task)
        base_case = extension.base_case(case, task)
        base_id = base_case.model_id(seeded=True)
        self.base.progress_context = self.progress_context
        base = self.base.model_for(base_case, describe(self.base.settings, task, base_case))
        if base.info.status != "ok":
            raise RuntimeError(f"its base model {base_id} {base.info.status}: {base.info.message}")
        path = self.checkpoints.path(case, key)
        with self.checkpoints.locked([path]):
            trained = self._load_checkpoint(path, model)
            if trained is None:
                model.load_state_dict(base.model.state_dict())
                cfg = extension.phase_train_config(self.settings, task)

                def do_train() -> TrainInfo:
                    return train(model, task, cfg, seed=case.seed, device=self.device, progress=self.settings.progress,
                                 progress_context=self.progress_context, description=case.model_id(seeded=True),
                                 draw=extension.draw(self.settings, task), stream=extension.STREAM)  # fmt: skip

                info = do_train() if timer is None else timer(do_train)
                trained = TrainedModel(model, info, reused=False)
                self.checkpoints.save(path, model, info, config)
        self.bases[key] = (base_id, base.info)
        self._models[key] = trained
        return trained

    def _scaffold_model_for(self, case: Case, key: str, config: dict[str, Any], timer: Timer | None) -> TrainedModel:
        """:meth:`model_for` of a scaffold run (:mod:`pebench.engine.scaffold`): the base model's checkpoint part of
        the way through its budget (cached as a model of its own), converted to NoPE and trained for the rest."""
        assert self.base is not None, "a second phase's cache has its base models' cache (the runner sets it)"
        task, base = self.task(case.task), self.base
        base_case = Case(case.encoding, case.task, task.train_length, case.seed, extension.base_point(case.point))
        at = scaffold.switch_step(self.settings, task)
        name = f"{base_case.model_id(seeded=True)} at step {at}"
        partial = base.build_model(base_case)
        path = base.checkpoints.path(base_case, config_hash({"model": base.model_key(base_case), "until": at}))
        with base.checkpoints.locked([path]):
            info = base.checkpoints.load(path, partial)
            if info is None:
                info = train(partial, task, base.settings.train_config(task), seed=case.seed, device=self.device,
                             progress=self.settings.progress, progress_context=self.progress_context,
                             description=name, until=at)  # fmt: skip
                base.checkpoints.save(path, partial, info, describe(base.settings, task, base_case))
        if info.status != "ok":
            raise RuntimeError(f"its base model {name} {info.status}: {info.message}")
        torch.manual_seed(case.seed)
        target = encodings.build(scaffold.TARGET, encoding_context(base.settings, task, case.encoding))
        model = Transformer(base.settings.model_config(task, case.encoding), target)
        kept = {k: v for k, v in partial.state_dict().items() if not k.startswith("encoding.")}
        missing, unexpected = model.load_state_dict(kept, strict=False)
        if [k for k in (*missing, *unexpected) if not k.startswith("encoding.")]:
            raise RuntimeError(f"{name} does not convert to {scaffold.TARGET}: {missing or unexpected}")
        path = self.checkpoints.path(case, key)
        with self.checkpoints.locked([path]):
            trained = self._load_checkpoint(path, model)
            if trained is None:

                def do_train() -> TrainInfo:
                    return train(model, task, scaffold.rest_config(self.settings, task), seed=case.seed,
                                 device=self.device, progress=self.settings.progress,
                                 progress_context=self.progress_context, description=case.model_id(seeded=True),
                                 stream=scaffold.STREAM)  # fmt: skip

                trained = TrainedModel(model, do_train() if timer is None else timer(do_train), reused=False)
                self.checkpoints.save(path, model, trained.info, config)
        self.bases[key] = (name, info)
        self._models[key] = trained
        return trained

    def _packed_model_for(self, case: Case, config: dict[str, Any], timer: Timer | None) -> TrainedModel:
        """:meth:`model_for` with packed seeds: the model of every seed 0..K-1 of this (encoding, task, config) that
        is neither in memory nor in a checkpoint is trained now, all together (:mod:`pebench.engine.packing`)."""
        cases = [replace(case, seed=s) for s in range(self.settings.pack_seeds)]
        keys = [self.model_key(c) for c in cases]
        paths = [self.checkpoints.path(c, k) for c, k in zip(cases, keys, strict=True)]
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
