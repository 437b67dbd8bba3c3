"""Trained models on disk: one owner for checkpoint paths, locks, the file format, loading and atomic saving.

A checkpoint is ``{"model": state_dict, "info": TrainInfo as a dict, "config": the case's stored configuration}``
written with :func:`torch.save`, named ``<encoding>-<task>-s<seed>-<model key>.pt`` in the cache directory (the model
key is the hash of the model's training configuration and seed, :func:`pebench.engine.identity.model_key`). A write
goes to a temporary file of the writing process first and is renamed into place, so a reader never sees half a
file. One file lock beside each checkpoint lets one process train a model while another that needs it waits and
then loads it. The model cache (one model or packed seeds) and the Ray executor go through :class:`CheckpointStore`.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import torch
from filelock import FileLock

from pebench.case import Case
from pebench.engine.training import TrainInfo
from pebench.models import Transformer


class CheckpointStore:
    """The checkpoints in ``directory``; None: no disk cache (every path is None, nothing is read or written)."""

    def __init__(self, directory: Path | str | None) -> None:
        self.directory = None if directory is None else Path(directory)

    def path(self, case: Case, key: str) -> Path | None:
        """Where the model ``key`` of ``case`` is kept (``rope-k_back-s0-<key>.pt``, its model id with the seed,
        :meth:`pebench.case.Case.model_id`); None without a cache."""
        if self.directory is None:
            return None
        return self.directory / f"{case.model_id(seeded=True)}-{key}.pt"

    @contextlib.contextmanager
    def locked(self, paths: Iterable[Path | None]) -> Iterator[None]:
        """Hold the lock of every checkpoint of ``paths`` (in the order given, so two processes asking for the same
        models in the same order never deadlock), creating the directory first."""
        with contextlib.ExitStack() as locks:
            for path in paths:
                if path is not None:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    locks.enter_context(FileLock(f"{path}.lock"))
            yield

    @staticmethod
    def load(path: Path | None, model: Transformer) -> TrainInfo | None:
        """Load the checkpoint at ``path`` into ``model`` and return its training info; None when there is none, or
        when it is corrupt or does not fit the model (such a checkpoint is retrained, not trusted)."""
        if path is None or not path.exists():
            return None
        try:
            state = torch.load(path, map_location="cpu", weights_only=True)
            model.load_state_dict(state["model"])
            return TrainInfo(**state["info"])
        except Exception:
            return None

    @staticmethod
    def dumps(model: Transformer, info: TrainInfo, config: dict[str, Any]) -> bytes:
        """The checkpoint of a trained model as bytes (the file's content), e.g. to send from a Ray worker."""
        buf = io.BytesIO()
        torch.save({"model": model.state_dict(), "info": info.to_dict(), "config": config}, buf)
        return buf.getvalue()

    @staticmethod
    def write(path: Path, data: bytes) -> None:
        """Write checkpoint bytes to ``path`` atomically (a temporary file of this process, then a rename)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_bytes(data)
        os.replace(tmp, path)

    def save(self, path: Path | None, model: Transformer, info: TrainInfo, config: dict[str, Any]) -> None:
        """Save a trained model at ``path`` (nothing without a cache)."""
        if path is not None:
            self.write(path, self.dumps(model, info, config))
