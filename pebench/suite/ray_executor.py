"""``pytest suite --executor ray``: train every model the session needs as a Ray task, then evaluate locally.

After collection, the controller lists the models of the selected cases (one per encoding, task, seed and config)
whose checkpoint is not in the cache yet, and submits one Ray task per model to a local Ray instance (started for
the session) or to the cluster at ``--ray-address`` (e.g. ``ray://head:10001`` or ``auto``). Each task builds the
model with the session's settings, trains it exactly as :meth:`pebench.engine.cache.ModelCache.model_for` would locally
(same seed, same data stream; on the CPU with the controller's thread count, so the numbers are the same), and returns
the checkpoint as bytes through Ray's object store, so the workers need no shared filesystem. The controller writes each
checkpoint into the cache; the cases then load it, evaluate and write the database as in a local run.

Resources: a quarter of a GPU per task (``num_gpus`` = 0.25, so four small models share a GPU) when the cluster has
GPUs, else as many CPUs as the controller's torch threads (the task runs that many threads: the same numbers as a
local run, and no oversubscribed node). Ray retries a task whose worker died (``max_retries``); a model
whose training raised is not retried: its cases are recorded as failed (status ``error`` with the message), and the
session goes on.

Workers import pebench: on a local instance they use this interpreter's environment; on a cluster install pebench
(and the same torch) on every node, or pass it with Ray's runtime environments (``working_dir``). Each task loads
the session's plugins (a ``--plugin`` file by its absolute path, so on a cluster it must exist there too).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from pebench import plugins
from pebench.case import Case
from pebench.engine.checkpoints import CheckpointStore
from pebench.engine.runner import Runner
from pebench.engine.settings import Settings
from pebench.errors import PebenchError

MAX_RETRIES = 3


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise PebenchError("--executor ray needs Ray: pip install 'pebench[ray]'") from None
    return ray


@dataclass
class RayRun:
    """What the executor did: models trained, failed, already cached; wall time."""

    trained: int = 0
    failed: int = 0
    cached: int = 0
    seconds: float = 0.0
    address: str = ""

    def summary(self) -> str:
        return (f"pebench --executor ray ({self.address}): {self.trained} model(s) trained, {self.failed} failed, "
                f"{self.cached} already cached, {self.seconds:.1f} s")  # fmt: skip


def train_to_bytes(settings: Settings, case: Case, config: dict[str, Any], threads: int,
                   plugin_specs: tuple[str, ...] = ()) -> bytes:  # fmt: skip
    """Train the model of ``case`` (on the worker) and return its checkpoint, as the runner would save it. The
    session's plugins (``plugin_specs``: absolute paths or module names) and entry points are loaded first."""
    plugins.load_session((), None, plugin_specs, None)
    torch.set_num_threads(threads)
    runner = Runner(replace(settings, cache_dir=None, progress=False, pack_seeds=1))  # one Ray task per seed
    trained = runner.models().model_for(case, config)
    return CheckpointStore.dumps(trained.model, trained.info, config)


def train_models(runner: Runner, cases: Iterable[Case], address: str | None, models_per_gpu: int = 4) -> RayRun:
    """Train on Ray the models of ``cases`` that have no checkpoint in ``runner``'s cache (see the module docstring).
    Failures are recorded in ``runner.failed_models``."""
    ray = _import_ray()
    start = time.perf_counter()
    runner.session_cache()  # --no-cache: a cache for this session only, where the workers' checkpoints land
    todo: dict[str, tuple[Case, dict[str, Any], Path]] = {}
    seen: set[str] = set()
    out = RayRun(address=address or "local")
    for case in cases:
        config = runner.describe(case)
        models = runner.models(case.point)
        key = models.model_key(case)
        if key in seen:
            continue
        seen.add(key)
        path = models.checkpoints.path(case, key)
        assert path is not None
        if path.exists():
            out.cached += 1
        else:
            todo[key] = (case, config, path)
    if not todo:
        out.seconds = time.perf_counter() - start
        return out
    started_here = not ray.is_initialized()
    if started_here:
        if address:
            ray.init(address=address, log_to_driver=False)
        else:
            ray.init(num_cpus=os.cpu_count() or 1, include_dashboard=False, log_to_driver=False)
    try:
        gpus = ray.cluster_resources().get("GPU", 0)
        threads = torch.get_num_threads()
        # a CPU task runs the controller's number of torch threads (the same sums, so the same numbers as a local
        # run) and reserves as many CPUs, so tasks never oversubscribe a node
        resources = {"num_gpus": 1.0 / models_per_gpu} if gpus else {"num_cpus": threads}
        task = ray.remote(max_retries=MAX_RETRIES, **resources)(train_to_bytes)
        def settings(case: Case) -> Settings:  # the settings of the case's sweep point
            s = replace(runner.models(case.point).settings, cache_dir=None, progress=False)
            return replace(s, device="cuda") if gpus else s

        specs = tuple(p.reload_spec for p in plugins.loaded())
        refs = {task.remote(settings(case), case, config, threads, specs): key
                for key, (case, config, _) in todo.items()}  # fmt: skip
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            key = refs[done[0]]
            path = todo[key][2]
            try:
                data = ray.get(done[0])
            except Exception as err:  # the training raised on the worker: its cases fail, the session goes on
                runner.failed_models[key] = f"training on Ray failed: {type(err).__name__}: {str(err).splitlines()[0]}"
                out.failed += 1
                continue
            CheckpointStore.write(path, data)
            out.trained += 1
    finally:
        if started_here:
            ray.shutdown()
    out.seconds = time.perf_counter() - start
    return out
