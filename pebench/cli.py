"""The pebench command: pebench run [pytest options], pebench list encodings|tasks, pebench check, pebench new
encoding|task NAME, pebench bench, pebench results, pebench report, pebench findings, pebench compare, pebench merge,
pebench db status|upgrade, pebench seed-spread, pebench rebuild, pebench guard, pebench table."""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from pebench.errors import PebenchError
from pebench.suite.launch import run_suite


def load_plugins(given: Sequence[str]) -> None:
    """The encodings and tasks of installed entry points, of the project's ini option ``pebench_plugins`` and of
    ``--plugin``, as the suite loads them (:mod:`pebench.plugins`)."""
    from pebench import plugins

    plugins.load_session(*plugins.configured(), given, Path.cwd())


def _from(registry: object, name: str) -> str:
    """``  (from plugin ...)`` for an encoding or task that is not built in (nothing for the built-ins)."""
    from pebench.registry import BUILT_IN

    source = registry.source(name)  # type: ignore[attr-defined]
    return "" if source == BUILT_IN else f"  (from {source})"


def _list(args: argparse.Namespace) -> int:
    from pebench import encodings, tasks
    from pebench.encodings.registry import ENCODINGS
    from pebench.suite.summary import lengths_text
    from pebench.tasks.registry import TASKS

    load_plugins(args.pebench_plugins)
    if args.what == "encodings":
        rows = encodings.describe()
        width = max(len(n) for n, _, _ in rows)
        for name, desc, paper in rows:
            needs = sorted(encodings.get(name).needs)
            extra = f"  (needs task annotations: {', '.join(needs)})" if needs else ""
            print(f"{name:<{width}}  {desc or '(no description)'}{f'  [{paper}]' if paper else ''}{extra}"
                  f"{_from(ENCODINGS, name)}")  # fmt: skip
    else:
        names = tasks.available()
        width = max(len(n) for n in names)
        for name in names:
            t = tasks.build(name)
            lo, hi = t.train_range
            train = f"{lo}" if lo == hi else f"{lo}-{hi}"
            print(
                f"{name:<{width}}  train {train}, eval quick {lengths_text(t.eval_lengths('quick'))} "
                f"full {lengths_text(t.eval_lengths('full'))}, {t.metric} "
                f"({'higher' if t.higher_is_better else 'lower'} is better), chance {t.chance_level:.3g}  "
                f"-- {t.description}"
                + (f"  (annotations: {', '.join(sorted(t.annotations))})" if t.annotations else "")
                + _from(TASKS, name)
            )
    return 0


def _check(args: argparse.Namespace) -> int:
    from pebench import testing
    from pebench.encodings.registry import ENCODINGS
    from pebench.tasks.registry import TASKS

    load_plugins(args.pebench_plugins)
    speed = not args.no_throughput
    if args.targets:
        reports = [r for target in args.targets for r in testing.check(target, speed)]
    else:
        reports = [*(testing.check_encoding(n, speed=speed) for n in ENCODINGS.names()),
                   *(testing.check_task(n) for n in TASKS.names())]  # fmt: skip
    for report in reports:
        print("\n".join(report.lines()))
    failed = [f"{r.kind} {r.name} ({', '.join(r.failed)})" for r in reports if not r.passed]
    print(f"{len(reports) - len(failed)} of {len(reports)} conform" + (f"; failing: {'; '.join(failed)}" if failed
                                                                         else ""))  # fmt: skip
    return 1 if failed else 0


def _bench(args: argparse.Namespace) -> int:
    from pebench.bench import main as bench_main

    return bench_main(args)


def _db(args: argparse.Namespace, write: bool = False) -> str:
    from pebench.store.database import resolve_url

    return resolve_url(args.db, write=write)


def _table(args: argparse.Namespace) -> int:
    from pebench.store.writable import check_file

    if args.output is not None:
        check_file(args.output, "-o")  # before any work: one line, nothing written
    from pebench.report.table import command  # the page's modules load torch: not for the parser

    return command(args, _db(args))


def _results(args: argparse.Namespace) -> int:
    from pebench.analysis.listing import results

    return results(_db(args), args.run, args.encoding, args.task, args.stale)


def _report(args: argparse.Namespace) -> int:
    from pebench.store.writable import check_file

    if args.allow_stale and args.with_reference is None:
        raise PebenchError("--allow-stale is about the reference results: give --with-reference [URL] too")
    for path, flag in ((args.output, "-o"), (args.png, "--png")):  # before any work: one line, nothing written
        if path is not None:
            check_file(path, flag)
    from pebench.analysis.reference import check_fresh, reference_url  # the page's modules load torch: after the checks
    from pebench.report.page import render_report

    reference = reference_url(args.with_reference) if args.with_reference is not None else None
    if reference is not None and not args.allow_stale:
        check_fresh(reference)
    info = render_report(_db(args), args.output, args.run, args.point, reference, args.allow_stale, args.curves)
    runs = ", ".join(str(r) for r in info.runs) or "none"
    more = info.n_stored > info.n_results
    stored = f" shown, of {info.n_stored} stored: each cell at its chosen rate" if more else ""
    print(f"wrote {info.path} ({info.size_bytes / 1e6:.2f} MB, {info.n_results} results of run(s) {runs}{stored}) "
          f"in {info.seconds:.2f} s")  # fmt: skip
    print("\n".join(info.standing), end="\n" if info.standing else "")
    if args.png:
        from pebench.report.screenshot import parse_size, png_size, screenshot

        width, height = parse_size(args.png_size)
        shot = screenshot(info.path, Path(args.png), width, height)
        w, h = png_size(shot)
        print(f"wrote {shot} ({w}x{h} pixels, the top of the page)")
    if args.open:
        import webbrowser

        webbrowser.open(info.path.resolve().as_uri())
    return 0


def _findings(args: argparse.Namespace) -> int:
    import json

    from pebench.analysis.findings import render, run_findings, to_dict

    report = run_findings(_db(args), args.run, args.point)
    print(json.dumps(to_dict(report), indent=2) if args.json else render(report))
    return 1 if args.strict and report.any_fails else 0


def _compare(args: argparse.Namespace) -> int:
    import json

    from pebench.analysis.compare import compare_runs, render
    from pebench.engine.settings import tolerances

    tol = tolerances(args.tolerance, args.ppl_tolerance, args.speed_tolerance)
    cmp = compare_runs(_db(args), args.base, args.current, tol)
    print(json.dumps(cmp.to_dict(), indent=2) if args.json else render(cmp))
    return 1 if cmp.regressed else 0


def _merge(args: argparse.Namespace) -> int:
    from pebench.store.merge import merge

    info = merge(args.parts, args.output, args.slim)
    shards = ", ".join(str(p["shard"] or "-") for p in info.parts)
    print(f"merged {len(info.parts)} part(s) (shards {shards}) into run {info.run_id} of {info.output}: "
          f"{info.n_results} results")  # fmt: skip
    return 0


def _database(args: argparse.Namespace) -> int:
    from pebench.store.database import open_db, open_readonly, safe_url
    from pebench.store.migrate import SchemaState, inspect_schema, upgrade_database

    url = _db(args, write=args.action == "upgrade")
    shown = safe_url(url)
    if args.action == "upgrade":
        engine = open_db(url, create=False, check=False)
        try:
            before, after = upgrade_database(engine, shown)
        finally:
            engine.dispose()
        was = "created" if before.kind == "empty" else f"revision {before.revision} ->"
        print(f"{shown}: already at schema revision {after}" if before.kind == "current" else
              f"{shown}: {was} schema revision {after}")  # fmt: skip
        return 0
    engine = open_readonly(url, check=False)
    try:
        with engine.connect() as conn:
            state: SchemaState = inspect_schema(conn)
    finally:
        engine.dispose()
    print(f"{shown}: {state.describe()}")
    return 0 if state.kind == "current" else 1


def _seed_spread(args: argparse.Namespace) -> int:
    from pebench.analysis.spread import seed_spread

    return seed_spread(_db(args), args.run, args.output)


class Parser(argparse.ArgumentParser):
    """argparse's parser with its errors in one line, as every pebench error: the message (no password) and where the
    usage is (argparse would print the usage first, over several lines). Subcommands' parsers are of this class too."""

    def error(self, message: str) -> NoReturn:
        from pebench.store.database import safe_url

        self.exit(2, f"{self.prog}: error: {safe_url(message)} (see: {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The ``pebench`` command's parser: one subcommand each, in the order ``pebench --help`` lists them."""
    parser = Parser(prog="pebench", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    _add_suite_commands(sub)
    _add_bench(sub)
    _add_result_commands(sub)
    _add_database_commands(sub)
    return parser


def _add_suite_commands(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """``run``, ``list``, ``check``, ``new``, ``rebuild`` and ``guard``: the suite, its encodings and tasks, the kit."""
    from pebench.engine.settings import add_flags
    from pebench.suite import guard, rebuild
    from pebench.testing import new as new_command

    sub.add_parser("run", add_help=False,
                   help="run the benchmark suite from any directory: every argument goes to pytest (pebench run "
                        "--help lists the suite's options), as pytest --pyargs pebench.suite ARGS")  # fmt: skip

    p = sub.add_parser("list", help="list encodings or tasks (with their source when not built in)")
    p.add_argument("what", choices=["encodings", "tasks"])
    add_flags(p.add_argument, ["pebench_plugins"])
    p.set_defaults(func=_list)

    p = sub.add_parser(
        "check",
        help="run every contract property on encodings or tasks: one line each with pass/fail and the number measured",
        description="The conformance kit (pebench.testing): hook shapes, causality, batch independence, determinism, "
        "checkpoint round-trip, option errors, shift invariance (relative families), uses position, capabilities "
        "against the hooks overridden and step throughput against rope for an encoding; declarations, batch layout, "
        "determinism, lengths and option errors for a task. Exit status 1 when a property fails.",
    )
    p.add_argument("targets", nargs="*", metavar="NAME|PATH.py",
                   help="registered names, or plugin files/modules (every class they register); default: all")
    add_flags(p.add_argument, ["pebench_plugins"])
    p.add_argument("--no-throughput", action="store_true", help="leave out the timed property (throughput vs rope)")
    p.set_defaults(func=_check)
    new_command.add_parser(sub)  # pebench new encoding|task NAME: a starting plugin file and its test
    rebuild.add_parser(sub)  # pebench rebuild: retrain the stale cells of a reference
    guard.add_parser(sub)  # pebench guard: retrain a few reference cells, compare within the seed noise


def _add_bench(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """``bench``: the speed benchmark (:mod:`pebench.bench`); the studies behind the defaults are in ``studies/``."""
    from pebench.bench import count
    from pebench.engine.settings import add_flags, dests

    p = sub.add_parser("bench", help="training-step throughput of the model vs Hugging Face LlamaForCausalLM")
    p.add_argument("--seq", type=count(1), nargs="+", default=[64, 256], help="sequence lengths (default 64 256)")
    add_flags(p.add_argument, dests("sizes"))
    p.add_argument("--vocab", type=count(2), default=64)
    p.add_argument("--encoding", default="rope",
                   help="encoding(s) of the pebench model, comma-separated or 'all' (default rope, as LLaMA)")
    p.add_argument("--timed-steps", type=count(1), default=10, help="timed steps per measurement (default 10)")
    p.add_argument("--warmup", type=count(0), default=3)
    p.add_argument("--repeats", type=count(1), default=3, help="alternating repeats; the best of each is reported")
    add_flags(p.add_argument, ["device"], device={"default": "cpu", "help": "cpu (default), cuda, cuda:N, mps or auto"})
    p.add_argument("--quick-tier", action="store_true", help="also time the core quick tier (5 encodings x 4 tasks)")
    p.add_argument("--tasks", metavar="T1,T2|all",
                   help="instead, time each task's quick tier on its own and print its in-distribution scores")
    p.add_argument("--encodings", metavar="E1,E2|all",
                   help="encodings for --tasks (default: nope,sinusoidal,learned,rope,alibi)")
    p.add_argument("--suite-args", default="", metavar="ARGS",
                   help="extra pytest options for --tasks runs, e.g. '--steps 100'")
    p.add_argument("--diagnostics", nargs="?", const="k_back", metavar="TASK",
                   help="instead, the mechanism diagnostics' cost per --encoding against a training step, on TASK "
                        "(default k_back; docs/diagnostics.md)")
    p.set_defaults(func=_bench)


def _add_result_commands(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """``results``, ``report``, ``findings`` and ``table``: what a run of a results database holds, shows and says."""
    from pebench.engine.settings import add_flags

    p = sub.add_parser("results", help="print the results stored in a database")
    add_flags(p.add_argument, ["db"])
    p.add_argument("--run", default=None, help="run id, latest, previous or all (default latest, as for report and "
                   "findings; with --stale, the latest result of every cell of all runs)")
    p.add_argument("--encoding", metavar="E1,E2", help="only these encodings' results")
    p.add_argument("--task", metavar="T1,T2", help="only these tasks' results")
    p.add_argument("--stale", action="store_true", help="list only the (encoding, task) cells whose latest result is "
                   "not what this pebench computes (its encoding's probe or data moved): to be rebuilt")  # fmt: skip
    p.set_defaults(func=_results)

    p = sub.add_parser("report", help="render the leaderboard of a run as one self-contained HTML page")
    add_flags(p.add_argument, ["db"])
    p.add_argument("--run", default="latest", help="run id, latest, previous or all (default latest)")
    p.add_argument("-o", "--output", default="leaderboard.html", help="output file (default leaderboard.html)")
    p.add_argument("--point", metavar="POINT", help="with a sweep, the point to show (e.g. layers4); a page never "
                   "ranks two points together (docs/sweeps.md)")  # fmt: skip
    add_flags(p.add_argument, ["with_reference", "allow_stale"])
    p.add_argument("--curves", metavar="ENC[,ENC...]", help="also draw these encodings' learning curves (all: every "
                   "encoding); by default the page draws the leaderboard's first 8 and, beside a reference, the "
                   "run's own")  # fmt: skip
    p.add_argument("--open", action="store_true", help="open the page in the default web browser")
    p.add_argument("--png", metavar="PATH", help="also write a PNG of the top of the page (headless Chromium)")
    p.add_argument("--png-size", default="1280x900", metavar="WxH",
                   help="the window --png captures, in CSS pixels (default 1280x900)")
    p.set_defaults(func=_report)

    p = sub.add_parser(
        "findings",
        help="check published claims about positional encodings against a run (holds / does not hold / not run)",
        description="Evaluate every registered finding (a published claim written as inequalities on scores at "
        "multiples of the training length) against one run: holds, does not hold, or not run (naming the missing "
        "cases and the suite command that runs them), with the numbers used and, with several seeds, 95% "
        "bootstrap intervals. Exit status 0 (it is a report), 1 with --strict when a finding does not hold, 2 on "
        "bad input. The claims are described in docs/findings.md.",
    )
    add_flags(p.add_argument, ["db"])
    p.add_argument("--run", default="latest",
                   help="run id, latest, previous, or all (the latest result of every case) (default latest)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--strict", action="store_true", help="exit 1 when a finding does not hold")
    p.add_argument("--point", metavar="POINT", help="with a sweep, the point to check (e.g. layers4)")
    p.set_defaults(func=_findings)
    p = sub.add_parser("table", help="the leaderboard (or a task's table) as CSV, Markdown or LaTeX, for a paper")
    add_flags(p.add_argument, ["db"])
    p.add_argument("--run", default="latest", help="run id, latest, previous or all (default latest)")
    p.add_argument("--task", metavar="T[,T...]", help="each task's table by length instead of the leaderboard")
    p.add_argument("--format", choices=("csv", "markdown", "latex"), default="markdown", help="default markdown")
    p.add_argument("-o", "--output", help="write to this file (default: standard output)")
    p.set_defaults(func=_table)


def _add_database_commands(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """``compare``, ``merge``, ``db`` and ``seed-spread``: runs against runs, parts into a run, the schema, the
    seed spread."""
    from pebench.analysis.spread import shipped_spread_command
    from pebench.engine.settings import add_flags, dests

    p = sub.add_parser(
        "compare",
        help="regressions between two runs (exit 1 when anything regressed, 2 on bad input)",
        description="Compare two runs per (encoding, task, length): mean over seeds with a bootstrap CI, delta and "
        "a verdict regressed / improved / same; training speed per model. Exit status 1 when anything regressed, "
        "0 otherwise, 2 on bad input.",
    )
    p.add_argument("base", metavar="BASE", help="run id, latest or previous")
    p.add_argument("current", metavar="CURRENT", help="run id, latest or previous")
    add_flags(p.add_argument, ["db", *dests("compare")])
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_compare)

    p = sub.add_parser(
        "merge",
        help="join the runs of sharded parts into one run",
        description="Copy the newest run of each PART (a SQLite file or database URL; PART::RUN picks a run) into "
        "one new run of OUT (a new file, or an existing pebench database to append to), keeping each part's "
        "provenance. Parts of different configurations, overlapping parts and parts already merged are refused.",
    )
    p.add_argument("parts", nargs="+", metavar="PART", help="results database of one part, or DB::RUN")
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="database to write the merged run to")
    p.add_argument("--slim", action="store_true", help="to ship: drop attention snapshots, keep each model's learning "
                   "curve once (at the training length), thinned to at most 10 points with the last validated one")
    p.set_defaults(func=_merge)

    p = sub.add_parser(
        "db",
        help="the results database's schema revision: status, or upgrade an older pebench database",
        description="status: what the database holds and its schema revision (exit 1 unless current). upgrade: "
        "bring a pebench database of an older revision to this pebench's (a suite run does it on its own when "
        "every step only adds); a database that is not pebench's, or is newer, is refused and left untouched.",
    )
    p.add_argument("action", choices=["status", "upgrade"])
    add_flags(p.add_argument, ["db"])
    p.set_defaults(func=_database)

    p = sub.add_parser(
        "seed-spread",
        help="measure each task's seed-to-seed spread from a run with several seeds (the noise single-seed "
        "differences must exceed to be marked)",
        description=f"From a run with several seeds per case, print (and with -o write) each task's pooled seed-to-"
        f"seed standard deviation of normalised scores. The shipped data is regenerated with: "
        f"{shipped_spread_command()} (the tasks measured on the stop-verdict study's files: python "
        f"studies/stop_verdicts/spread.py in the repository)",
    )
    add_flags(p.add_argument, ["db"])
    p.add_argument("--run", default="latest", help="run id, latest or previous (default latest)")
    p.add_argument("-o", "--output", default=None, help="write the JSON here (e.g. pebench/data/seed_spread.json)")
    p.set_defaults(func=_seed_spread)


def main(argv: Sequence[str] | None = None) -> int:
    """The ``pebench`` command's exit status. A reader that stops early (``pebench list tasks | head -1``) ends it
    quietly with status 32 (EPIPE), as Python's own ``python -m json.tool`` and ``cProfile`` do: no traceback."""
    try:
        status = _main(list(sys.argv[1:] if argv is None else argv))
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's last flush at exit
        return status
    except BrokenPipeError:
        with contextlib.suppress(OSError, ValueError):  # what is still buffered goes nowhere, silently
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return errno.EPIPE


def _main(argv: list[str]) -> int:
    if argv[:1] == ["run"]:  # a thin front door: pytest parses (and explains) every option
        return run_suite(argv[1:])
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except PebenchError as err:  # one line, any password in it hidden
        from pebench.store.database import safe_url

        print(f"pebench: error: {safe_url(str(err))}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
