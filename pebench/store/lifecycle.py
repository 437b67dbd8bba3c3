"""A run's life: running (its process renews a heartbeat), finished, failed, or interrupted; and which run
``latest``, ``previous`` and ``--baseline previous`` mean.

A run row records its writer's ``host`` and ``pid`` and a ``heartbeat_at`` renewed every :data:`HEARTBEAT_S`
seconds while the suite runs. A row still marked ``running`` is seen as **interrupted** (:func:`effective_status`)
when its process is gone: on the same host, no process has its pid; on any host, its heartbeat (or, for a run from
before heartbeats, its start) is older than :data:`STALE_S`. Read commands show that status without writing it; a
suite run, when it starts its own run, writes it (:func:`mark_interrupted`).

``latest`` is the newest *finished* run, ``previous`` the finished one before it (by start, then id): a killed,
failed or still running run is never picked by a name, only by its id. ``--baseline previous`` is the finished run
most comparable with the cases about to run (:func:`comparable_run`).
"""

from __future__ import annotations

import datetime as dt
import os
import socket
from collections.abc import Iterable
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from pebench.errors import DatabaseError
from pebench.status import RunStatus
from pebench.store.schema import Result, Run, utcnow

HEARTBEAT_S = 60.0
"""How often a running suite renews its run's heartbeat."""
STALE_S = 600.0
"""A running run whose heartbeat is older than this is interrupted, whichever host it ran on."""
NAMED_RUNS = ("latest", "previous")


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by another user
    except OSError:
        return False
    return True


def effective_status(run: Any, now: dt.datetime | None = None, host: str | None = None) -> str:
    """The status of ``run`` (a Run row or a mapping of its columns) as things stand: a ``running`` run whose
    process is gone is ``interrupted``."""
    get = run.get if isinstance(run, dict) else lambda k: getattr(run, k)
    status = get("status")
    if status != RunStatus.RUNNING:
        return status
    now = now or utcnow()
    last = get("heartbeat_at") or get("started_at")
    if last is not None and (now - last).total_seconds() > STALE_S:
        return RunStatus.INTERRUPTED
    pid = get("pid")
    if pid is not None and get("host") == (host or socket.gethostname()) and not pid_alive(int(pid)):
        return RunStatus.INTERRUPTED
    return RunStatus.RUNNING


def heartbeat(engine: Engine, run_id: int) -> None:
    """Renew the heartbeat of a running run."""
    with Session(engine) as s, s.begin():
        s.execute(update(Run).where(Run.id == run_id, Run.status == RunStatus.RUNNING).values(heartbeat_at=utcnow()))


def mark_interrupted(engine: Engine) -> list[int]:
    """Write ``interrupted`` into every running run whose process is gone; returns their ids."""
    with Session(engine) as s, s.begin():
        gone = [r for r in s.scalars(select(Run).where(Run.status == RunStatus.RUNNING))
                if effective_status(r) == RunStatus.INTERRUPTED]  # fmt: skip
        for run in gone:
            run.status = RunStatus.INTERRUPTED
        return [r.id for r in gone]


def _finished_ids(s: Session) -> list[int]:
    """Finished runs, newest first."""
    q = select(Run.id).where(Run.status == RunStatus.FINISHED).order_by(Run.started_at.desc(), Run.id.desc())
    return list(s.scalars(q))


def _status_counts(s: Session) -> str:
    counts: dict[str, int] = {}
    for run in s.scalars(select(Run)):
        status = effective_status(run)
        counts[status] = counts.get(status, 0) + 1
    return ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "none"


def resolve_run_id(engine: Engine, run: int | str) -> int:
    """A run id from an int, a numeric string, ``latest`` (the newest finished run) or ``previous`` (the finished
    one before it); unknown ones raise DatabaseError."""
    with Session(engine) as s:
        if isinstance(run, str) and run in NAMED_RUNS:
            ids = _finished_ids(s)
            idx = NAMED_RUNS.index(run)
            if len(ids) <= idx:
                raise DatabaseError(f"no {run} run: {run} means the {'newest' if idx == 0 else 'second newest'} "
                                    f"finished run, and the database has {len(ids)} finished (runs: "
                                    f"{_status_counts(s)}); give a run id")  # fmt: skip
            return ids[idx]
        try:
            run_id = int(run)
        except (TypeError, ValueError):
            raise DatabaseError(f"run {run!r} is not a run id; valid: an integer, latest, previous") from None
        if s.get(Run, run_id) is None:
            ids = sorted(s.scalars(select(Run.id)))
            shown = ", ".join(str(i) for i in ids[-10:]) or "none"
            raise DatabaseError(f"unknown run id {run_id}; existing runs: {shown}")
        return run_id


def comparable_run(engine: Engine, models: Iterable[tuple[str, str, str]]) -> int:
    """``--baseline previous``: among finished runs, the one holding results for the most of ``models`` ((encoding,
    task, config hash) of the cases about to run), the newest on a tie. A one-case rerun or a run of other settings
    is thereby never preferred to a complete comparable run."""
    wanted = set(models)
    with Session(engine) as s:
        finished = _finished_ids(s)
        if not finished:
            raise DatabaseError(f"no previous run to compare with: the database has no finished run (runs: "
                                f"{_status_counts(s)})")  # fmt: skip
        q = (select(Result.run_id, Result.encoding, Result.task, Result.config_hash)
             .where(Result.run_id.in_(finished)).group_by(Result.run_id, Result.encoding, Result.task,
                                                          Result.config_hash))  # fmt: skip
        cover: dict[int, int] = {}
        for run_id, enc, task, cfg in s.execute(q):
            if (enc, task, cfg) in wanted:
                cover[run_id] = cover.get(run_id, 0) + 1
    if not cover:
        return finished[0]  # nothing comparable: the newest finished run, which the compatibility check then names
    rank = {run_id: i for i, run_id in enumerate(finished)}
    return max(cover, key=lambda r: (cover[r], -rank[r]))


def run_counts(engine: Engine) -> dict[int, int]:
    """Results per run id."""
    with Session(engine) as s:
        return dict(s.execute(select(Result.run_id, func.count()).group_by(Result.run_id)).all())
