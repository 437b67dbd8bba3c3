"""``pebench guard``: retrain a small fixed sample of real reference cells and compare them with the reference within
their seed noise -- a guard against the platform (another CPU, BLAS, torch build or thread count) or nondeterminism
moving the results. Behavioural currency (``pebench results --stale``) cannot see that: its probes check that the
code computes what it did on fixed inputs, not that training on this machine lands where the reference's did.

Each cell (encoding, task) is retrained from the reference run that holds its seed 0 (the latest such run that is
not a set-aside size run, i.e. has no ``--sweep``), with that run's stored options
(:func:`pebench.suite.rebuild.run_flags`) but its ``-k`` / ``-m`` selection, and ``--seeds 1`` (seed 0 only),
``--no-cache`` (no checkpoint is reused) and ``--db OUT``; under the default learning-rate protocol that is one model
per rate. Each retrained (case, seed 0, evaluation length) result is then set beside the reference's results of the
same case id on normalised scores (:func:`pebench.analysis.scoring.add_normalised`) and is **within the seed noise**
unless :func:`judge` finds it beyond (:func:`pebench.analysis.noise.beyond_noise` either way, ``sigma`` the task's
measured seed-to-seed spread at the run's protocol, :func:`pebench.analysis.noise.task_sigma`): against one reference
seed, more than ``1.96 * sqrt(2) * sigma`` apart; against several, outside their t-interval by more than
``1.96 * sigma``. On a machine other than the reference's a retrained model is another draw of its cell's seed noise
(measured: 3 of 28 results of the default sample more than ``1.96 * sqrt(2) * sigma`` from seed 0, none outside the
spread of the reference's three seeds), so where the reference holds several seeds they are the noise. A result whose
configuration is not the reference's is a stale cell, not a platform difference (**configuration differs**); without
a measured spread nothing is judged (**no measured spread**). A cell the reference already holds as stale
(:func:`pebench.analysis.currency.stale_pairs`) is not retrained: ``pebench rebuild`` does that, and its difference
would say nothing about the platform.

The default sample, :data:`SAMPLE`: three cells of the shipped reference that train in about a minute or two a model
on one thread (sort: 2 blocks, 600 steps, about 40 s; reverse with NoPE's 6 blocks about 135 s, its stored
``train_time_s``), with measured spreads at the default protocol, and that exercise three different attention paths
(a rotary encoding, an additive bias, no positional signal at all) on results that are neither all at the ceiling
nor all at chance (sort's lengths run from 1.0 in distribution to 0.0-0.95 at 4x; NoPE's reverse from 0.68-0.98 down
to 0.0), so a changed computation has room to show.

Exit status: 1 when a result is beyond the noise, its configuration differs, it was not retrained or the suite failed;
0 otherwise; 2 on bad input (an unknown encoding or task, a cell the reference does not hold), before any training.
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pebench.errors import PebenchError

if TYPE_CHECKING:
    import pandas as pd

SAMPLE: tuple[tuple[str, str], ...] = (("rope", "sort"), ("alibi", "sort"), ("nope", "reverse"))
"""The cells a guard retrains by default (see the module's docstring for why these)."""
DEFAULT_OUT = "sqlite:///guard.db"
DROPPED = ("keyword", "markexpr", "seeds")
"""Stored run options the guard does not pass on: the run's selection, and its seeds (the guard trains seed 0)."""

WITHIN, BEYOND, DIFFERS = "within the seed noise", "beyond the seed noise", "configuration differs"
NO_SPREAD, MISSING, NO_SCORE = "no measured spread", "not retrained", "no score to compare"
FAILING = (BEYOND, DIFFERS, MISSING)
"""The verdicts that fail the guard (exit status 1)."""
Z95 = 1.959964


@dataclass
class Cell:
    """One cell of the sample, located in the reference: the run it is retrained from and what that costs."""

    encoding: str
    task: str
    run_id: int = 0
    options: dict[str, Any] = field(default_factory=dict)
    device: str = ""
    models: int = 0
    train_time_s: float = 0.0
    stale: str | None = None
    """Why the reference's cell is stale (then it is not retrained), or None."""

    @property
    def name(self) -> str:
        return f"{self.encoding} on {self.task}"

    def args(self, out: str, extra: Sequence[str] = ()) -> list[str]:
        """The suite arguments that retrain seed 0 of this cell with its run's options into ``out``."""
        from pebench.suite.rebuild import run_flags

        kept = {k: v for k, v in self.options.items() if k not in DROPPED}
        return [*run_flags(kept), "--seeds", "1", "--encoding", self.encoding, "--task", self.task, "--no-cache",
                "--db", out, "-q", *extra]  # fmt: skip


@dataclass
class Compared:
    """One retrained result beside the reference's: its seed 0 and, where the reference holds several, all seeds."""

    case_id: str
    eval_length: int
    reference: float | None
    retrained: float | None
    sigma: float | None
    verdict: str
    seeds: list[float] = field(default_factory=list)
    """The reference's normalised scores of this case and length, every seed it holds (seed 0 among them)."""

    def line(self) -> str:
        def fmt(v: float | None) -> str:
            return "-" if v is None else f"{v:.3f}"

        both = self.reference is not None and self.retrained is not None
        detail = [f"{self.retrained - self.reference:+.3f}"] if both else []  # type: ignore[operator]
        if self.sigma is not None and len(self.seeds) > 1:
            detail.append(f"seeds {min(self.seeds):.3f}-{max(self.seeds):.3f}, one seed ±{Z95 * self.sigma:.3f}")
        elif self.sigma is not None:
            detail.append(f"noise ±{Z95 * math.sqrt(2) * self.sigma:.3f}")
        extra = f" ({', '.join(detail)})" if detail else ""
        return f"  {self.case_id} seed 0: reference {fmt(self.reference)}, retrained {fmt(self.retrained)}{extra}: " \
               f"{self.verdict}"  # fmt: skip


def judge(retrained: float, seeds: Sequence[float], sigma: float) -> str:
    """:data:`WITHIN` or :data:`BEYOND`: the retrained seed 0 against the reference's seeds of the same case and
    length, either way, by :func:`pebench.analysis.noise.beyond_noise` -- one seed each side: more than
    ``1.96 * sqrt(2) * sigma`` apart; several reference seeds: their t-interval and ``± 1.96 * sigma`` around the
    retrained one separate. A retrained model whose float rounding differs (another CPU, BLAS, thread count, packed
    seeds) follows another trajectory: it is another draw of the cell's seed noise, which at a length where a cell's
    seeds spread widely is far wider than the task's pooled sigma (the reference's NoPE on reverse at 9, rate 3e-3:
    seeds 0.42-0.80 against a pooled sigma of 0.04)."""
    from pebench.analysis.noise import beyond_noise

    one = [retrained]
    return BEYOND if beyond_noise(one, list(seeds), sigma) or beyond_noise(list(seeds), one, sigma) else WITHIN


def parse_cells(text: str | None) -> list[tuple[str, str]]:
    """``--cells enc:task,...`` (default :data:`SAMPLE`), each name checked against the registries."""
    from pebench import encodings, tasks

    if text is None:
        return list(SAMPLE)
    pairs = []
    for item in (x.strip() for x in text.split(",") if x.strip()):
        encoding, sep, task = item.partition(":")
        if not sep or not encoding or not task:
            raise PebenchError(f"--cells {item!r}: give ENCODING:TASK, e.g. rope:sort")
        encodings.get(encoding)  # an unknown name: one line with the valid ones (UnknownNameError)
        tasks.get(task)
        pairs.append((encoding, task))
    if not pairs:
        raise PebenchError("--cells: no cell given; give ENCODING:TASK,..., e.g. rope:sort,alibi:sort")
    return pairs


def locate(url: str, pairs: Sequence[tuple[str, str]]) -> list[Cell]:
    """Each cell of ``pairs`` in the reference at ``url``: the latest run without ``--sweep`` holding its seed 0,
    with that run's options, device and the models and stored training time of its seed 0; a one-line error for a
    cell no such run holds."""
    from pebench.analysis.currency import stale_pairs
    from pebench.analysis.page_data import not_ranked
    from pebench.analysis.training_time import stored_training
    from pebench.store.database import open_readonly, safe_url
    from pebench.store.load import load_light, runs

    engine = open_readonly(url)
    try:
        by_id = {int(r["id"]): r for r in runs(engine)}
        df = load_light(engine)
        usable = [rid for rid, r in by_id.items()  # never a set-aside run: another size, phase or the diagnostics
                  if not (r["options"] or {}).get("sweep") and not not_ranked(r["options"])]
        cells = []
        for encoding, task in pairs:
            mine = df[(df["encoding"] == encoding) & (df["task"] == task) & (df["seed"] == 0)]
            mine = mine[mine["run_id"].isin(usable)]
            if mine.empty:
                raise PebenchError(f"{encoding} on {task}: {safe_url(url)} holds no result of seed 0 of it outside a "
                                   "run set aside (--sweep, --extend, --diagnostics-run); pick a cell it holds")
            run_id = int(mine["run_id"].max())
            rows, run = mine[mine["run_id"] == run_id], by_id[run_id]
            models, seconds = stored_training(rows)
            stale = stale_pairs(engine, rows)
            cells.append(Cell(encoding, task, run_id, dict(run["options"] or {}), str(run.get("device") or "?"),
                              models, seconds, stale[0][1] if stale else None))  # fmt: skip
    finally:
        engine.dispose()
    return cells


def plan_lines(cells: Sequence[Cell], url: str, out: str, extra: Sequence[str]) -> list[str]:
    """The plan: per cell its run, device, models, stored training time and the exact suite arguments."""
    from pebench.analysis.training_time import duration_text
    from pebench.store.database import safe_url

    live = [c for c in cells if c.stale is None]
    lines = [f"guard plan: {len(live)} cell(s) of {safe_url(url)}, {sum(c.models for c in live)} model(s), "
             f"{duration_text(sum(c.train_time_s for c in live))} of stored training time"]  # fmt: skip
    for c in cells:
        if c.stale is not None:
            lines.append(f"  {c.name}: stale in the reference ({c.stale}): not guarded; pebench rebuild retrains it")
            continue
        lines.append(f"  {c.name}: run {c.run_id} ({c.device}), {c.models} model(s), "
                     f"{duration_text(c.train_time_s)} stored")  # fmt: skip
        lines.append(f"    pebench run {safe_url(shlex.join(c.args(out, extra)))}")
    return lines


def _last_run(url: str) -> int | None:
    """The newest run id of the database at ``url``, or None when there is none (or no database yet)."""
    from pebench.store.database import open_readonly
    from pebench.store.load import runs

    try:
        engine = open_readonly(url)
    except PebenchError:
        return None
    try:
        ids = [int(r["id"]) for r in runs(engine)]
    except Exception:  # a database without pebench's tables yet
        return None
    finally:
        engine.dispose()
    return max(ids) if ids else None


def retrain(cells: Sequence[Cell], out: str, extra: Sequence[str]) -> dict[tuple[str, str], tuple[int | None, int]]:
    """Run the suite for each cell that is not stale: per cell, the run it wrote in ``out`` (None: none) and the
    suite's exit status."""
    from pebench.suite.launch import run_suite

    done: dict[tuple[str, str], tuple[int | None, int]] = {}
    live = [c for c in cells if c.stale is None]
    for n, cell in enumerate(live, 1):
        print(f"[{n}/{len(live)}] {cell.name} (seed 0, run {cell.run_id}'s options)", flush=True)
        before = _last_run(out)
        status = run_suite(cell.args(out, extra))
        after = _last_run(out)
        done[(cell.encoding, cell.task)] = (after if after != before else None, status)
    return done


def _rows(url: str, run_id: int, cell: Cell) -> pd.DataFrame:
    """Every seed of ``cell`` in run ``run_id`` of ``url``, normalised, one row per (case id, length, seed)."""
    from pebench.analysis.scoring import add_normalised
    from pebench.store.load import load

    df = load(url, run=run_id, encodings=[cell.encoding], tasks=[cell.task])
    df = df.sort_values("id").drop_duplicates(["case_id", "eval_length", "seed"], keep="last")
    return add_normalised(df) if not df.empty else df.assign(norm=[])


def compare(cell: Cell, reference: str, out: str, run_id: int | None,
            spread: Mapping[str, Any] | None = None) -> list[Compared]:  # fmt: skip
    """Each reference result of seed 0 of ``cell`` beside the retrained one of run ``run_id`` of ``out``
    (:func:`judge`); the sigma is the task's measured seed spread at the reference run's protocol."""
    from pebench.analysis import lr
    from pebench.analysis.noise import task_sigma
    from pebench.analysis.scoring import finite

    ref = _rows(reference, cell.run_id, cell)
    new = _rows(out, run_id, cell) if run_id is not None else None
    retrained = {} if new is None else {(r["case_id"], int(r["eval_length"])): r for r in
                                        new[new["seed"] == 0].to_dict("records")}  # fmt: skip
    seeds = {key: [float(v) for v in g["norm"] if finite(v)] for key, g in ref.groupby(["case_id", "eval_length"])}
    grid, found = lr.protocol(cell.options), []
    for r in ref[ref["seed"] == 0].sort_values(["point", "eval_length", "case_id"]).to_dict("records"):
        key = (r["case_id"], int(r["eval_length"]))
        sigma = task_sigma(cell.task, r["config"], spread, lr_grid=grid)
        a = float(r["norm"]) if finite(r["norm"]) else None
        n = retrained.get(key)
        b = None if n is None or not finite(n["norm"]) else float(n["norm"])
        if n is None:
            verdict = MISSING
        elif n["config"] != r["config"]:
            verdict = DIFFERS
        elif a is None or b is None:
            verdict = BEYOND if (a is None) != (b is None) else NO_SCORE  # one failed, the other scored
        elif sigma is None:
            verdict = NO_SPREAD
        else:
            verdict = judge(b, seeds.get(key) or [a], sigma)
        found.append(Compared(key[0], key[1], a, b, sigma, verdict, seeds.get(key, [])))
    return found


def verdict_line(results: Sequence[Compared], cells: Sequence[Cell], device: str, ref_device: str) -> str:
    """``guard: 18 of 18 results within the seed noise (rope on sort, ...) on DEVICE``, with the other verdicts."""
    counts = Counter(r.verdict for r in results)
    others = "; ".join(f"{n} {v}" for v, n in counts.items() if v != WITHIN)
    same = sum(r.reference is not None and r.reference == r.retrained for r in results)
    names = ", ".join(c.name for c in cells if c.stale is None)
    where = f"{device} (as the reference's)" if device == ref_device else f"{device} (the reference's: {ref_device})"
    return (f"guard: {counts[WITHIN]} of {len(results)} results {WITHIN} ({names}) on {where}; {same} identical "
            "to the reference's seed 0" + (f"; {others}" if others else ""))  # fmt: skip


def _device(url: str, run_id: int | None) -> str:
    from pebench.store.database import open_readonly
    from pebench.store.load import runs

    if run_id is None:
        return "?"
    engine = open_readonly(url)
    try:
        return next((str(r.get("device") or "?") for r in runs(engine) if int(r["id"]) == run_id), "?")
    finally:
        engine.dispose()


def _spread(path: Path | None) -> dict[str, Any] | None:
    if path is None:
        return None
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise PebenchError(f"--spread {path}: cannot read it as seed-spread JSON ({err})") from None


def reference_default() -> str:
    """The shipped reference, ``pebench/data/reference.db`` inside the installed package."""
    from pebench.analysis.reference import REFERENCE_FILE

    if not REFERENCE_FILE.is_file():
        raise PebenchError(f"no reference results ship with this pebench ({REFERENCE_FILE}); give --reference URL")
    return f"sqlite:///{REFERENCE_FILE}"


def command(args: argparse.Namespace) -> int:
    """``pebench guard``: locate the cells (every check before training), print the plan, retrain, compare."""
    from pebench.store.database import safe_url

    reference = args.reference or reference_default()
    spread = _spread(args.spread)
    cells = locate(reference, parse_cells(args.cells))
    print("\n".join(plan_lines(cells, reference, args.db, args.pytest_args)), flush=True)
    if args.dry_run:
        print("guard: nothing trained (--dry-run)")
        return 0
    if all(c.stale is not None for c in cells):
        print("guard: nothing to compare: every cell is stale in the reference (pebench rebuild)")
        return 0
    done = retrain(cells, args.db, args.pytest_args)
    results: list[Compared] = []
    failed_suites = []
    lines = [f"guard: seed 0 of {len(done)} cell(s) retrained into {safe_url(args.db)}, beside the reference's"]
    for cell in (c for c in cells if c.stale is None):
        run_id, status = done[(cell.encoding, cell.task)]
        if status != 0:
            failed_suites.append(f"{cell.name} (the suite exited {status})")
        found = compare(cell, reference, args.db, run_id, spread)
        lines += [f" {cell.name} (reference run {cell.run_id}):", *(r.line() for r in found)]
        results += found
    last = max((r for r, _ in done.values() if r is not None), default=None)
    ref_devices = ", ".join(dict.fromkeys(c.device for c in cells if c.stale is None))
    lines.append(verdict_line(results, cells, _device(args.db, last), ref_devices))
    if failed_suites:
        lines.append(f"guard: the suite failed for {'; '.join(failed_suites)}")
    print("\n".join(lines))
    return 1 if failed_suites or any(r.verdict in FAILING for r in results) else 0


def add_parser(sub: Any) -> None:
    """``pebench guard`` in the CLI's subcommands."""
    p = sub.add_parser("guard", help="retrain a few reference cells (seed 0) and check that they land within the "
                       "seed noise of the reference: a platform and nondeterminism guard")  # fmt: skip
    p.add_argument("--reference", metavar="URL", help="the reference database (default: the shipped one, "
                   "pebench/data/reference.db in the installed package)")  # fmt: skip
    p.add_argument("--db", default=DEFAULT_OUT, metavar="OUT",
                   help=f"where the retrained results go (default {DEFAULT_OUT}, in the current directory)")
    p.add_argument("--cells", metavar="ENC:TASK,...", help="the cells to retrain (default: "
                   + ",".join(f"{e}:{t}" for e, t in SAMPLE) + ")")  # fmt: skip
    p.add_argument("--spread", type=Path, metavar="FILE", help="seed-spread JSON to judge by (the format of "
                   "pebench/data/seed_spread.json; default: the shipped one)")  # fmt: skip
    p.add_argument("--dry-run", action="store_true", help="print the plan (cells, runs, suite arguments) only")
    p.add_argument("pytest_args", nargs="*", help="more suite options after --, e.g. -- -n 2")
    p.set_defaults(func=command)
