"""``pebench rebuild``: retrain just the stale cells of a reference database and put them in place of the old ones.

A cell (encoding, task) is stale when its latest result is not what this pebench computes
(:func:`pebench.engine.code.staleness`: its encoding's probe or its task's data moved). The rebuild groups the stale
cells by the run that holds them and by encoding; each group is rerun with that run's own stored options (seeds,
learning-rate protocol, tier, sizes: :func:`run_flags`) restricted to its encoding and tasks, into a part database of
its own under ``--parts`` with ``--reuse`` (so a stopped rebuild resumes where it stopped, and ``--shard I/N`` splits
the groups between machines or sessions sharing the parts folder). ``--merge`` then replaces each complete group's
cells in the reference: the old results of those cells are deleted and the new ones inserted into the same run
(slimmed like the run was, :func:`pebench.store.merge.slim`), with their fingerprints, in one transaction per group.
The work is at most the stale cells' training: nothing else is retrained.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import delete, insert, select

from pebench.errors import PebenchError
from pebench.status import ResultStatus, RunStatus

SKIPPED = frozenset({"encoding", "task", "shard", "reuse", "baseline", "executor", "no_cache"})
"""Stored run options a rebuild does not pass on: the cells are the group's, the rest is this machine's."""


@dataclass
class Group:
    """The stale cells of one encoding in one run of the reference."""

    run_id: int
    encoding: str
    tasks: list[str]
    options: dict[str, Any] = field(default_factory=dict)
    models: int = 0
    """The models its cells' results stored (each once: :func:`pebench.analysis.training_time.stored_training`)."""
    train_time_s: float = 0.0
    """Their stored training time: about what retraining them takes on a machine like the reference's."""

    @property
    def part(self) -> str:
        return f"run{self.run_id}-{self.encoding}.db"


def run_flags(options: Mapping[str, Any]) -> list[str]:
    """The suite flags that reproduce a run's stored ``options`` (``runs.options``): every run-scoped flag whose
    value is not its default, but :data:`SKIPPED`, its learning-rate protocol always (``--lr-sweep``: stored None
    is one rate) and its ``-k`` / ``-m`` selection. A setting the run did not give
    (:func:`pebench.engine.currency.given_of`) is left out: it is rebuilt at this pebench's default, which is what
    :mod:`pebench.engine.currency` judges the cell by."""
    from pebench.engine.currency import given_of
    from pebench.engine.settings import FLAGS, dests

    given, settings = given_of(options), set(dests("setting"))
    args: list[str] = []
    for dest in dests("run"):
        flag, value = FLAGS[dest], options.get(dest)
        if dest == "lr_sweep":  # stored None is one rate (the flag's default is the default protocol)
            args.append(f"--lr-sweep={'off' if value is None else value}")
            continue
        if dest in SKIPPED or value is None or value == flag.options.get("default") or value in ([], ""):
            continue
        if given is not None and dest in settings and dest not in given:
            continue  # a setting the run left at its default: rebuilt at today's default, as currency judges it
        if flag.options.get("action") in ("store_true", "store_false"):  # a switch: given when not at its default
            args += [flag.flag] if value != flag.options.get("default", False) else []
        elif flag.options.get("action") == "append":
            args += [a for v in value for a in (flag.flag, str(v))]
        else:
            args.append(f"{flag.flag}={value}")
    selection = [(opt, options[key]) for key, opt in (("keyword", "-k"), ("markexpr", "-m")) if options.get(key)]
    return args + [a for pair in selection for a in pair]


def plan(url: str) -> list[Group]:
    """The stale cells of the database at ``url``, grouped by run and encoding, each group with its cells' models
    and their stored training time."""
    from pebench.analysis.currency import stale_pairs
    from pebench.analysis.training_time import stored_training
    from pebench.store.database import open_readonly
    from pebench.store.load import load_light, runs

    engine = open_readonly(url)
    try:
        options = {int(r["id"]): r["options"] or {} for r in runs(engine)}
        df = load_light(engine)
        pairs = stale_pairs(engine, df)
    finally:
        engine.dispose()
    groups: dict[tuple[int, str], Group] = {}
    for row, _ in pairs:
        key = (int(row.run_id), row.encoding)
        groups.setdefault(key, Group(key[0], row.encoding, [], options[key[0]])).tasks.append(row.task)
    for g in groups.values():
        cells = df[(df["run_id"] == g.run_id) & (df["encoding"] == g.encoding) & df["task"].isin(g.tasks)]
        g.models, g.train_time_s = stored_training(cells)
    return [groups[k] for k in sorted(groups)]


def _complete(part: Path, group: Group) -> bool:
    """Whether ``part`` holds a finished run with an ok result of every cell of ``group``."""
    from pebench.store.database import open_readonly
    from pebench.store.load import load_light, runs

    if not part.is_file():
        return False
    engine = open_readonly(f"sqlite:///{part}")
    try:
        finished = [int(r["id"]) for r in runs(engine) if r["status"] == RunStatus.FINISHED]
        df = load_light(engine)
    finally:
        engine.dispose()
    df = df[df["run_id"] == max(finished)] if finished else df.iloc[0:0]
    done = set(df.loc[df["status"] == ResultStatus.OK, "task"])
    return not df.empty and set(group.tasks) <= done and (df["status"] == ResultStatus.OK).all()


def train(groups: Sequence[Group], parts: Path, extra: Sequence[str]) -> int:
    """Run the suite for each group that has no complete part yet; the failed groups' count."""
    from pebench.suite.launch import run_suite

    parts.mkdir(parents=True, exist_ok=True)
    failed = 0
    for n, group in enumerate(groups, 1):
        part = parts / group.part
        if _complete(part, group):
            print(f"[{n}/{len(groups)}] {group.encoding} in run {group.run_id}: done already ({part})")
            continue
        print(f"[{n}/{len(groups)}] {group.encoding} on {', '.join(group.tasks)} (run {group.run_id})", flush=True)
        args = [*run_flags(group.options), "--encoding", group.encoding, "--task", ",".join(group.tasks),
                "--db", f"sqlite:///{part.resolve()}", "--reuse", "-q", *extra]  # fmt: skip
        failed += run_suite(args) != 0
    return failed


def merge_in(url: str, groups: Sequence[Group], parts: Path) -> int:
    """Replace each group's cells in the reference at ``url`` by its part's results; the results inserted."""
    from sqlalchemy.orm import Session

    from pebench.store.database import open_db
    from pebench.store.fingerprints import store_fingerprints
    from pebench.store.merge import read_part, slim
    from pebench.store.schema import RESULT_FIELDS, CurvePoint, Result

    missing = [g.part for g in groups if not _complete(parts / g.part, g)]
    if missing:
        raise PebenchError(f"pebench rebuild --merge: {len(missing)} group(s) not complete yet ({', '.join(missing)});"
                           " run pebench rebuild (each --shard) until they are")  # fmt: skip
    engine, inserted = open_db(url, create=False), 0
    try:
        for group in groups:
            part = read_part(f"sqlite:///{(parts / group.part).resolve()}")
            if group.options.get("slim"):
                slim(part)
            with Session(engine) as s, s.begin():
                old = select(Result.id).where(Result.run_id == group.run_id, Result.encoding == group.encoding,
                                              Result.task.in_(group.tasks))  # fmt: skip
                s.execute(delete(CurvePoint).where(CurvePoint.result_id.in_(old)))
                s.execute(delete(Result).where(Result.id.in_(old)))
                store_fingerprints(s, part.fingerprints.values())
                for r in part.results:
                    row = {k: r[k] for k in RESULT_FIELDS} | {"reused_from": None, "run_id": group.run_id}
                    rid = s.execute(insert(Result).values(**row, created_at=r["created_at"])).inserted_primary_key[0]
                    points = [{"result_id": rid, **p} for p in part.curves.get(r["id"], [])]
                    if points:
                        s.execute(insert(CurvePoint), points)
                    inserted += 1
    finally:
        engine.dispose()
    return inserted


def command(args: argparse.Namespace) -> int:
    """``pebench rebuild``: the plan, then (``--dry-run``: nothing) this shard's training, or ``--merge``."""
    from pebench.analysis.training_time import duration_text
    from pebench.store.database import resolve_url, safe_url

    url = resolve_url(args.db)
    groups = plan(url)
    cells = sum(len(g.tasks) for g in groups)
    print(f"{safe_url(url)}: {cells} stale cell(s) in {len(groups)} group(s) (run, encoding)")
    if groups:
        models, seconds = sum(g.models for g in groups), sum(g.train_time_s for g in groups)
        print(f"  to train: about {models:,} model(s), {duration_text(seconds)} of stored training time (each "
              "model once, as the reference stored it)")  # fmt: skip
    if not groups or args.dry_run:
        for g in groups:
            print(f"  run {g.run_id}: {g.encoding} on {', '.join(g.tasks)} ({g.models} model(s), "
                  f"{duration_text(g.train_time_s)})")  # fmt: skip
        return 0
    if args.merge:
        print(f"merged {merge_in(url, groups, args.parts)} result(s) into {safe_url(url)}")
        return 0
    index, count = args.shard
    mine = groups[index - 1 :: count]
    failed = train(mine, args.parts, args.pytest_args)
    print(f"shard {index}/{count}: {len(mine) - failed} of {len(mine)} group(s) trained into {args.parts}"
          + ("; then pebench rebuild --merge" if not failed else "; rerun to resume the failed ones"))  # fmt: skip
    return 1 if failed else 0


def _shard(text: str) -> tuple[int, int]:
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shard {text!r}: give I/N, e.g. 1/4") from None
    if not 1 <= i <= n:
        raise argparse.ArgumentTypeError(f"--shard {text!r}: I must be 1..N")
    return i, n


def add_parser(sub: Any) -> None:
    """``pebench rebuild`` in the CLI's subcommands."""
    p = sub.add_parser("rebuild", help="retrain only the stale cells of a reference database and merge them in")
    p.add_argument("--db", help="the reference database (default: $PEBENCH_DB, else sqlite:///results.db)")
    p.add_argument("--parts", type=Path, default=Path("rebuild-parts"), help="folder of the groups' part databases "
                   "(default rebuild-parts; shared by every --shard)")  # fmt: skip
    p.add_argument("--shard", type=_shard, default=(1, 1), metavar="I/N", help="train every N-th group from the I-th")
    p.add_argument("--merge", action="store_true", help="put the complete parts in place of the stale cells")
    p.add_argument("--dry-run", action="store_true", help="list the stale cells by group and train nothing")
    p.add_argument("pytest_args", nargs="*", help="more suite options after --, e.g. -- -n 2 --cache-dir DIR")
    p.set_defaults(func=command)
