"""``pebench merge PART... -o OUT``: join the runs of sharded parts into one run.

Each part is a database (a SQLite path or a URL), optionally followed by ``::RUN`` to pick a run (default: its newest
run), so parts written to one shared database are ``URL::4 URL::5 URL::6``. The parts' results and learning curves
are copied into one new run of ``OUT`` (a new file, or an existing pebench database such as the nightly history, to
which the merged run is appended). ``pebench report``, ``pebench compare`` and ``--baseline`` then treat it like an
unsharded run.

The merged run keeps each part's provenance in ``runs.options["merged_from"]`` (database, run id, host, device,
commit, times, shard, command). Its status is ``finished`` only when every part finished; its device and host list
the parts' distinct values.

Refused with a one-line error, writing nothing:

* parts of different configurations: run options (other than ``--shard``, ``-n`` and the baseline run), pebench or
  torch version, or git commit differ;
* a case (encoding, task, train length, evaluation length, seed, config hash) present in two parts -- overlapping
  shards, or a part given twice;
* a part already merged into ``OUT`` (merging twice), and a part that is itself a merged run.

A part is the newest run of its database by default; a shard that was interrupted and resumed (its command run again
with ``--reuse``) has its earlier runs' results copied into that newest run, ``model_reused`` set. Those copies are
the shard's own work: where a copy's origin is an earlier run of the same database with the same options (the same
shard of the same configuration) and commit, the merged row takes the origin's ``model_reused`` (trained there, or
itself loaded from the checkpoint cache) and stands for the computed result (no ``reused_from``); the part's
provenance lists those runs (``resumed_runs``). So the page of a merged run says how many of its models were
trained by its parts, however often each part was resumed.

``--slim`` (:func:`slim`) keeps the merged run small enough to ship, as the reference results do: it drops the
attention snapshots and keeps each trained model's learning curve once, on its result at the training length (the one
the report's curves and the learning-rate choice read), thinned to at most :data:`SLIM_POINTS` points that always
include the last validated one. The run's ``options["slim"]`` says what was dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from pebench.errors import PebenchError
from pebench.status import RunStatus
from pebench.store.database import open_db, open_readonly, resolve_run_id, safe_url, session_scope
from pebench.store.fingerprints import load_fingerprints, store_fingerprints
from pebench.store.load import curve_owners
from pebench.store.schema import RESULT_FIELDS, CurvePoint, Result, Run

IGNORED_OPTIONS = ("shard", "numprocesses", "baseline", "baseline_run", "merged_from")
"""Run options that may differ between the parts of one run."""
SAME_PROVENANCE = ("package_version", "torch_version", "git_commit", "git_dirty", "tier")
CASE_KEY = ("encoding", "task", "train_length", "eval_length", "seed", "config_hash")
SLIM_POINTS = 10
SLIM_NOTE = (f"attention snapshots dropped; each model's learning curve kept once (its training-length result), "
             f"thinned to at most {SLIM_POINTS} points with the last validated one")  # fmt: skip


class MergeError(PebenchError):
    """Parts that cannot be merged into one run."""


@dataclass
class Part:
    spec: str
    url: str
    run: dict[str, Any]
    results: list[dict[str, Any]]
    curves: dict[int, list[dict[str, Any]]]
    resumed: dict[int, bool] = field(default_factory=dict)
    """Origin id -> its ``model_reused``, for the copies whose origin is an earlier run of this shard (resumed)."""
    resumed_runs: list[int] = field(default_factory=list)
    fingerprints: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The behavioural fingerprints its results name (:mod:`pebench.store.fingerprints`), copied with them."""

    @property
    def shown(self) -> str:
        """The spec as messages show it: without its password."""
        return safe_url(self.spec)

    @property
    def fingerprint(self) -> dict[str, Any]:
        r = self.run
        return {"db": self.shown, "run_id": r["id"], "host": r["host"], "device": r["device"],
                "git_commit": r["git_commit"], "started_at": str(r["started_at"]), "finished_at": str(r["finished_at"]),
                "status": r["status"], "shard": (r["options"] or {}).get("shard"), "command": r["command"],
                **({"resumed_runs": self.resumed_runs} if self.resumed_runs else {})}  # fmt: skip


@dataclass
class MergeInfo:
    output: str
    """The output database as messages show it (:func:`~pebench.store.database.safe_url`: no password)."""
    run_id: int
    n_results: int
    parts: list[dict[str, Any]]


def _url(spec: str) -> str:
    return spec if "://" in spec else f"sqlite:///{Path(spec).expanduser().resolve()}"


def read_part(spec: str) -> Part:
    """The run a part names (``DB`` or ``DB::RUN``) with its results and curves."""
    db, sep, run = spec.rpartition("::") if "::" in spec else (spec, "", "latest")
    url = _url(db)
    engine = open_readonly(url)
    try:
        run_id = resolve_run_id(engine, run)
        with Session(engine) as s:
            row = s.get(Run, run_id)
            run_row = {c.name: getattr(row, c.name) for c in Run.__table__.columns}
            query = select(Result).where(Result.run_id == run_id).order_by(Result.id)
            results = [{c.name: getattr(r, c.name) for c in Result.__table__.columns} for r in s.scalars(query)]
            curves: dict[int, list[dict[str, Any]]] = {}
            ids = [r["id"] for r in results]
            for i in range(0, len(ids), 500):
                q = select(CurvePoint).where(CurvePoint.result_id.in_(ids[i : i + 500])).order_by(CurvePoint.id)
                for p in s.scalars(q):
                    curves.setdefault(p.result_id, []).append(
                        {c: getattr(p, c) for c in ("step", "loss", "accuracy", "val_1x", "val_2x")})
            resumed, resumed_runs = _resumed_origins(s, row, results)
        named = {r[k] for r in results for k in ("encoding_fingerprint", "task_fingerprint")}
        stored = load_fingerprints(engine, named)
    finally:
        engine.dispose()
    if not results:
        raise MergeError(f"part {safe_url(spec)}: run {run_id} has no results")
    return Part(spec, url, run_row, results, curves, resumed, resumed_runs, stored)


def _resumed_origins(session: Session, run: Run, results: list[dict[str, Any]]) -> tuple[dict[int, bool], list[int]]:
    """Of the ids ``results`` (of ``run``) were copied from, those computed by an earlier run of the same shard
    (same options and commit: the shard resumed), with their ``model_reused``; and those runs' ids."""
    ids = sorted({r["reused_from"] for r in results if r["reused_from"]})
    found: dict[int, bool] = {}
    runs: set[int] = set()
    for i in range(0, len(ids), 500):
        query = (select(Result.id, Result.model_reused, Run.id, Run.options, Run.git_commit)
                 .join(Run, Result.run_id == Run.id).where(Result.id.in_(ids[i : i + 500])))  # fmt: skip
        for rid, reused, run_id, options, commit in session.execute(query):
            if run_id < run.id and _same_shard(options, run.options) and commit == run.git_commit:
                found[rid] = bool(reused)
                runs.add(run_id)
    return found, sorted(runs)


def _same_shard(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool:
    """Whether run options ``a`` and ``b`` are one shard of one configuration (``-n`` and the baseline may differ)."""
    free = set(IGNORED_OPTIONS) - {"shard"}

    def kept(options: dict[str, Any] | None) -> dict[str, Any]:
        return {k: v for k, v in (options or {}).items() if k not in free}

    return kept(a) == kept(b)


def _options(part: Part) -> dict[str, Any]:
    return {k: v for k, v in (part.run["options"] or {}).items() if k not in IGNORED_OPTIONS}


def check_parts(parts: Sequence[Part]) -> None:
    """Raise :class:`MergeError` unless ``parts`` are disjoint parts of one configuration."""
    if not parts:
        raise MergeError("nothing to merge: give at least one part")
    first = parts[0]
    for part in parts:
        if (part.run["options"] or {}).get("merged_from"):
            raise MergeError(f"part {part.shown} is already a merged run; merge the original parts instead")
        for name in SAME_PROVENANCE:
            if part.run[name] != first.run[name]:
                raise MergeError(f"parts {first.shown} and {part.shown} differ in {name}: {first.run[name]!r} vs "
                                 f"{part.run[name]!r}; merge only parts of one configuration")  # fmt: skip
        a, b = _options(first), _options(part)
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                raise MergeError(f"parts {first.shown} and {part.shown} differ in option {key}: {a.get(key)!r} vs "
                                 f"{b.get(key)!r}; merge only parts of one configuration")  # fmt: skip
    seen: dict[tuple[Any, ...], str] = {}
    for part in parts:
        for r in part.results:
            key = tuple(r[k] for k in CASE_KEY)
            if key in seen:
                raise MergeError(f"case {r['case_id']} (seed {r['seed']}) is in both {seen[key]} and {part.shown}: "
                                 "overlapping shards, or a part given twice")  # fmt: skip
            seen[key] = part.shown


def thin(points: Sequence[dict[str, Any]], most: int = SLIM_POINTS) -> list[dict[str, Any]]:
    """At most ``most`` of a curve's ``points`` (in step order), evenly spaced, always with the last point and the
    last one with a validation value (which the learning-rate choice reads)."""
    if len(points) <= most:
        return list(points)
    validated = [i for i, p in enumerate(points) if p.get("val_1x") is not None]
    must = {len(points) - 1, *validated[-1:]}
    stride = -(-len(points) // (most - len(must)))
    keep = sorted(must | set(range(len(points) - 1 - stride, -1, -stride)[: most - len(must)]))
    return [points[i] for i in keep]


def slim(part: Part) -> None:
    """Drop ``part``'s attention snapshots and keep each model's curve once, on the result at its training length
    (else its first result), thinned by :func:`thin`."""
    part.curves = {rid: thin(part.curves.get(rid, [])) for rid in curve_owners(part.results).values()}
    for r in part.results:
        if isinstance(r["metrics"], dict) and "attention" in r["metrics"]:
            r["metrics"] = {k: v for k, v in r["metrics"].items() if k != "attention"}


def _already_merged(engine: Any, parts: Sequence[Part]) -> None:
    with Session(engine) as s:
        for run_id, options in s.execute(select(Run.id, Run.options)):
            for earlier in (options or {}).get("merged_from") or []:
                for part in parts:
                    fp = part.fingerprint
                    same = all(earlier.get(k) == fp[k] for k in ("run_id", "host", "started_at", "command"))
                    if same:
                        raise MergeError(
                            f"part {part.shown} (run {fp['run_id']} of {fp['host']}, started {fp['started_at']}) is "
                            f"already merged into run {run_id} of the output"
                        )


def _existing_origins(session: Session, copies: list[dict[str, Any]]) -> dict[int, int]:
    """Of the ids that ``copies`` were reused from, those the output holds for the same case (id -> id)."""
    wanted = {r["reused_from"]: tuple(r[k] for k in CASE_KEY) for r in copies}
    found: dict[int, int] = {}
    ids = sorted(wanted)
    for i in range(0, len(ids), 500):
        cols = [Result.id, *(getattr(Result, k) for k in CASE_KEY)]
        for rid, *key in session.execute(select(*cols).where(Result.id.in_(ids[i : i + 500]))):
            if tuple(key) == wanted[rid]:
                found[rid] = rid
    return found


def merge(specs: Sequence[str], output: str, slim_parts: bool = False) -> MergeInfo:
    """Merge the parts ``specs`` into one new run of ``output`` (see the module docstring); ``slim_parts``: each
    part through :func:`slim` first."""
    parts = [read_part(spec) for spec in specs]
    check_parts(parts)
    for part in parts if slim_parts else []:
        slim(part)
    out_url = _url(output)
    engine = open_db(out_url)
    try:
        _already_merged(engine, parts)
        runs = [p.run for p in parts]
        statuses = {r["status"] for r in runs}
        others = sorted(statuses - {RunStatus.FINISHED})
        info = {k: runs[0][k] for k in SAME_PROVENANCE}
        info.update(
            started_at=min(r["started_at"] for r in runs),
            finished_at=max((r["finished_at"] for r in runs if r["finished_at"] is not None), default=None),
            status=RunStatus.FINISHED if statuses == {RunStatus.FINISHED} else others[0],
            device=", ".join(dict.fromkeys(r["device"] for r in runs))[:128],
            host=", ".join(dict.fromkeys(r["host"] for r in runs))[:255],
            python_version=", ".join(dict.fromkeys(r["python_version"] for r in runs))[:32],
            platform=", ".join(dict.fromkeys(r["platform"] or "" for r in runs))[:255],
            options={**_options(parts[0]), "shard": None, "merged_from": [p.fingerprint for p in parts],
                     **({"slim": SLIM_NOTE} if slim_parts else {})},
            command=safe_url("pebench merge " + " ".join(specs) + f" -o {output}" + " --slim" * slim_parts),
            schema_version=runs[0]["schema_version"],
        )
        with session_scope(engine) as s:
            run = Run(**info)
            s.add(run)
            s.flush()
            run_id = run.id
            next_id = (s.scalar(select(Result.id).order_by(Result.id.desc()).limit(1)) or 0) + 1
            rows, points, new_id = [], [], {}
            for part in parts:
                for r in part.results:
                    new_id[(part.spec, r["id"])] = next_id
                    next_id += 1
            origins = _existing_origins(s, [r for p in parts for r in p.results
                                            if r["reused_from"] and r["reused_from"] not in p.resumed])  # fmt: skip
            for part in parts:
                for r in part.results:
                    rid = new_id[(part.spec, r["id"])]
                    row = {k: r[k] for k in RESULT_FIELDS}
                    # a result copied by --reuse points at the computed one: follow it if that one came along, keep
                    # it if the output holds it (a part that started as a copy of the output), else drop the link
                    if r["reused_from"] in part.resumed:  # the shard's own work, done before it was resumed
                        row.update(model_reused=part.resumed[r["reused_from"]], reused_from=None)
                    elif r["reused_from"]:
                        row["reused_from"] = new_id.get((part.spec, r["reused_from"]), origins.get(r["reused_from"]))
                    rows.append({"id": rid, "run_id": run_id, "created_at": r["created_at"], **row})
                    points += [{"result_id": rid, **p} for p in part.curves.get(r["id"], [])]
            store_fingerprints(s, [f for p in parts for f in p.fingerprints.values()])
            s.execute(insert(Result), rows)
            if points:
                s.execute(insert(CurvePoint), points)
    finally:
        engine.dispose()
    return MergeInfo(safe_url(out_url), run_id, len(rows), [p.fingerprint for p in parts])
