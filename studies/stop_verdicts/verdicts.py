"""The stop-verdict study (issue 28, item 5): do the verdicts hold when models stop when learned?

    python studies/stop_verdicts/verdicts.py [T1,T2|all] [--encodings E1,E2|all] [--k 3] [--out studies/stop_verdicts]

A model stopped by :class:`~pebench.engine.stopping.StopRule` has exactly the weights its budget run had at that step
(same data, same schedule), so one budget run gives both sides: each (encoding, task, seed) is trained to its budget at
the defaults, a copy of its weights is taken at the first curve point where the rule fires (through
:func:`pebench.engine.training.train`'s ``on_point``), and both models are evaluated at the quick tier's lengths as the
suite evaluates them (the task's first evaluation split, its score). Per task one JSON file is written (per seed
and encoding: the scores of both sides, the steps each took, the stop reason, the wall time of the budget run),
so a long measurement survives in parts; :func:`table` turns the files into the comparison: per cell the
learned / partly / not-learned verdict of the mean over seeds (:func:`pebench.analysis.scoring.learned_verdict`)
and per evaluated length the marked winner (:func:`pebench.analysis.noise.marked_best` with the task's measured
spread), budget vs stop, the cells and columns that differ, and the steps (the CPU cost of training) of each side.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from pebench import metrics
from pebench.analysis import noise, scoring, seeds
from pebench.case import Case
from pebench.engine.evaluation import evaluate
from pebench.engine.runner import Runner
from pebench.engine.settings import Settings
from pebench.engine.stopping import StopRule
from pebench.engine.training import TrainInfo, train
from pebench.errors import PebenchError
from pebench.status import ResultStatus


def _scores(runner: Runner, model: torch.nn.Module, task_name: str, seed: int) -> dict[int, float]:
    task = runner.task(task_name)
    s = runner.settings
    return {L: task.score(evaluate(model, task, L, task.eval_splits[0], s.eval_samples, seed,  # type: ignore[arg-type]
                                   runner.device, s.eval_batch_size)) for L in task.eval_lengths("quick")}  # fmt: skip


SIDES: dict[str, StopRule] = {
    "stop": StopRule("learned"),
    "plateau": StopRule("plateau"),
    "stop95": StopRule("learned", accuracy=0.95),
}
"""The stopped sides one budget run measures: ``stop`` is ``--stop learned``, ``plateau`` is ``--stop plateau``, and
``stop95`` is the learned rule at a 0.95 training accuracy threshold (a candidate, not an option yet)."""


def measure(task_name: str, encs: Sequence[str], seeds: int, rule: str = "learned",
            settings: Settings | None = None) -> dict[str, Any]:  # fmt: skip
    """Budget and stopped results of ``encs`` x ``seeds`` on one task at the defaults (or ``settings``; see the module
    docstring). The ``stop`` side is ``rule``; the other :data:`SIDES` come with it, and each row keeps its
    training curve (steps, loss, token accuracy per point) so that other rules' steps can be replayed."""
    runner = Runner(settings or Settings(progress=False))
    sides = SIDES | {"stop": StopRule(rule)}
    task = runner.task(task_name)
    budget = runner.settings.train_config(task)
    rows = []
    config = None
    for seed in range(seeds):
        for enc in encs:
            if runner.not_applicable(enc, task_name) is not None:
                continue
            case = Case(enc, task_name, task.train_length, seed)
            config = runner.describe(case)
            model = runner.build_model(case)
            snaps: dict[str, dict[str, Any]] = {}

            def on_point(info: TrainInfo, model: torch.nn.Module = model,
                         snaps: dict[str, dict[str, Any]] = snaps) -> None:  # fmt: skip
                for side, stop in sides.items():
                    if side not in snaps and (why := stop.check(info.curve, info.steps, budget.steps)) is not None:
                        snaps[side] = {"state": copy.deepcopy(model.state_dict()), "steps": info.steps, "reason": why}

            start, cpu = time.perf_counter(), time.process_time()
            info = train(model, task, budget, seed=seed, device=runner.device, progress=False, on_point=on_point)
            wall, cpu = time.perf_counter() - start, time.process_time() - cpu
            full = _scores(runner, model, task_name, seed)
            row: dict[str, Any] = {"encoding": enc, "seed": seed, "budget": full, "status": info.status,
                                   "budget_steps": info.steps}  # fmt: skip
            for side in sides:
                snap = snaps.get(side)
                if snap is not None:
                    model.load_state_dict(snap["state"])
                row |= {side: full if snap is None else _scores(runner, model, task_name, seed),
                        f"{side}_steps": info.steps if snap is None else snap["steps"],
                        f"{side}_reason": "budget" if snap is None else snap["reason"]}  # fmt: skip
            row |= {
                "train_wall_s": round(wall, 2),
                "train_cpu_s": round(cpu, 2),
                "curve": [[p["step"], round(p["loss"], 5), round(p["accuracy"], 5)] for p in info.curve],
            }
            rows.append(row)
            print(f"{task_name} {enc} s{seed}: {info.steps} -> "
                  + ", ".join(f"{side} {row[side + '_steps']} ({row[side + '_reason']})" for side in sides)
                  + f"; at {task.train_length}: {full[task.train_length]:.3f} -> "
                  + ", ".join(f"{row[side][task.train_length]:.3f}" for side in sides), flush=True)  # fmt: skip
    m = task.metric
    return {"task": task_name, "train_length": task.train_length, "metric": m, "chance": task.chance_level,
            "higher_is_better": task.higher_is_better, "vocab_size": task.vocab_size,
            "rule": sides["stop"].to_dict(), "rules": {side: r.to_dict() for side, r in sides.items()},
            "budget_steps": budget.steps, "config": config, "threads": torch.get_num_threads(),
            "rows": rows}  # fmt: skip


def _normalised(data: dict[str, Any], side: str) -> dict[str, dict[int, dict[int, float]]]:
    """encoding -> evaluated length -> seed -> normalised score of one side (0 chance, 1 perfect)."""
    m = metrics.of_result(data["metric"], data["higher_is_better"])
    per: dict[str, dict[int, dict[int, float]]] = {}
    for r in data["rows"]:
        for L, v in r[side].items():
            if (n := scoring.normalised(v, m, data["chance"], ResultStatus.OK, data["vocab_size"])) is not None:
                per.setdefault(r["encoding"], {}).setdefault(int(L), {})[r["seed"]] = n
    return per


def auto_seeds(data: dict[str, Any], side: str, most: int) -> dict[str, int]:
    """encoding -> how many seeds ``--seeds auto:most`` would have run, replayed on the measured seeds of one side:
    seed 0 everywhere, then seed k only for the cells :func:`pebench.analysis.seeds.undecided` leaves open on the
    seeds below k that they ran (as :mod:`pebench.suite.adaptive` decides in a run)."""
    per = _normalised(data, side)
    sigma = noise.task_sigma(data["task"], data["config"])
    used = dict.fromkeys(per, 1)
    for k in range(1, min(most, len({r["seed"] for r in data["rows"]}))):  # as far as seeds were measured
        seen = {e: {L: {s: v for s, v in by.items() if s < min(used[e], k)} for L, by in lengths.items()}
                for e, lengths in per.items()}  # fmt: skip
        added = [e for e in seeds.undecided(seen, data["train_length"], sigma) if used[e] == k]
        if not added:
            break
        for e in added:
            used[e] = k + 1
    return used


def verdicts(data: dict[str, Any], side: str, used: dict[str, int] | None = None
             ) -> tuple[dict[str, str], dict[int, str | None]]:  # fmt: skip
    """(encoding -> learned / partly / not learned, length -> the marked winner or None) of one side, on every seed
    or on the first ``used[encoding]`` seeds of each encoding (:func:`pebench.analysis.noise.cell_verdicts`)."""
    return noise.cell_verdicts(
        _normalised(data, side), data["train_length"], noise.task_sigma(data["task"], data["config"]), used
    )


def table(paths: Sequence[Path], most: int = 3) -> str:
    """The markdown comparison of the JSON files ``paths`` (see the module docstring): budget (every seed) against
    stop when learned (every seed), and against stop when learned with ``--seeds auto:most`` replayed
    (:func:`auto_seeds`); the cost is the training steps, which take the same time each on a side."""
    lines = ["| task | seeds | verdict of each encoding: budget -> stop -> stop + seeds auto | marked winner per "
             "length: budget -> stop -> stop + seeds auto | seeds auto: seeds per encoding | training steps: budget, "
             "stop, stop + seeds auto |", "|---|---|---|---|---|---|"]  # fmt: skip
    count = dict.fromkeys(("cells", "cols", "same_stop", "same_auto", "cols_stop", "cols_auto"), 0)
    steps = {"budget": 0, "stop": 0, "auto": 0}
    cpu = {"budget": 0.0, "stop": 0.0, "auto": 0.0}
    extra: dict[str, dict[str, float]] = {}  # the other sides, over the tasks that measured them
    for path in sorted(paths):
        data = json.loads(path.read_text())
        used = auto_seeds(data, "stop", most)
        old_v, old_w = verdicts(data, "budget")
        stop_v, stop_w = verdicts(data, "stop")
        auto_v, auto_w = verdicts(data, "stop", used)

        def tie(w: str | None) -> str:
            return w or "tie"

        v_text = ", ".join(f"{e} {old_v[e]}" + ("" if stop_v[e] == old_v[e] else f" -> **{stop_v[e]}**")
                           + ("" if auto_v[e] == stop_v[e] else f" -> auto **{auto_v[e]}**")
                           for e in old_v)  # fmt: skip
        w_text = ", ".join(f"{L}: {tie(old_w[L])}" + ("" if stop_w[L] == old_w[L] else f" -> **{tie(stop_w[L])}**")
                           + ("" if auto_w[L] == stop_w[L] else f" -> auto **{tie(auto_w[L])}**")
                           for L in old_w)  # fmt: skip
        s_task = {"budget": sum(r["budget_steps"] for r in data["rows"]),
                  "stop": sum(r["stop_steps"] for r in data["rows"]),
                  "auto": sum(r["stop_steps"] for r in data["rows"] if r["seed"] < used[r["encoding"]])}  # fmt: skip
        for k in steps:
            steps[k] += s_task[k]
        for r in data["rows"]:  # a model's steps cost alike: its CPU time pro rata of the steps each side trains
            per_step = r.get("train_cpu_s", 0.0) / max(r["budget_steps"], 1)
            cpu["budget"] += per_step * r["budget_steps"]
            cpu["stop"] += per_step * r["stop_steps"]
            cpu["auto"] += per_step * r["stop_steps"] * (r["seed"] < used[r["encoding"]])
        for side in [k for k in SIDES if k != "stop" and f"{k}_steps" in data["rows"][0]]:
            side_v, side_w = verdicts(data, side)
            e = extra.setdefault(side, dict.fromkeys(("tasks", "cells", "same", "cols", "cols_same", "cpu", "base"), 0))
            e["tasks"] += 1
            e["cells"] += len(old_v)
            e["same"] += sum(old_v[k] == side_v[k] for k in old_v)
            e["cols"] += len(old_w)
            e["cols_same"] += sum(old_w[L] == side_w[L] for L in old_w)
            for r in data["rows"]:
                per_step = r.get("train_cpu_s", 0.0) / max(r["budget_steps"], 1)
                e["cpu"] += per_step * r[f"{side}_steps"]
                e["base"] += per_step * r["budget_steps"]
        count["cells"] += len(old_v)
        count["same_stop"] += sum(old_v[e] == stop_v[e] for e in old_v)
        count["same_auto"] += sum(old_v[e] == auto_v[e] for e in old_v)
        count["cols"] += len(old_w)
        count["cols_stop"] += sum(old_w[L] == stop_w[L] for L in old_w)
        count["cols_auto"] += sum(old_w[L] == auto_w[L] for L in old_w)
        seeds_n = len({r["seed"] for r in data["rows"]})
        b = s_task["budget"]
        lines.append(
            f"| {data['task']} | {seeds_n} | {v_text} | {w_text} | "
            f"{', '.join(f'{e} {n}' for e, n in sorted(used.items()))} | "
            f"{b}, {s_task['stop']} ({s_task['stop'] / b:.2f}), {s_task['auto']} ({s_task['auto'] / b:.2f}) |"
        )
    if count["cells"]:
        b = max(steps["budget"], 1)
        lines.append(
            f"\nStop when learned: {count['same_stop']} of {count['cells']} cells keep their verdict, "
            f"{count['cols_stop']} of {count['cols']} columns their marked winner, training steps "
            f"{steps['budget']} -> {steps['stop']} ({steps['stop'] / b:.2f}). With seeds auto:{most} as well: "
            f"{count['same_auto']} of {count['cells']} cells, {count['cols_auto']} of {count['cols']} columns, "
            f"{steps['auto']} steps ({steps['auto'] / b:.2f} of the budget side's). CPU time of training (each "
            f"model's measured CPU time, pro rata of its steps): budget {cpu['budget'] / 60:.0f} min, stop "
            f"{cpu['stop'] / 60:.0f} min ({cpu['stop'] / max(cpu['budget'], 1e-9):.2f}), stop + seeds auto "
            f"{cpu['auto'] / 60:.0f} min ({cpu['auto'] / max(cpu['budget'], 1e-9):.2f}).")  # fmt: skip
    for side, e in extra.items():
        lines.append(f"\n`{side}` ({SIDES[side].to_dict()}), on the {e['tasks']:.0f} tasks measured with it: "
                     f"{e['same']:.0f} of {e['cells']:.0f} cells keep their verdict, {e['cols_same']:.0f} of "
                     f"{e['cols']:.0f} columns their marked winner, CPU time {e['cpu'] / max(e['base'], 1e-9):.2f} of "
                     f"the budget side's.")  # fmt: skip
    return "\n".join(lines)


def stale(data: dict[str, Any], runner: Runner | None = None) -> str | None:
    """Why a measured file no longer describes its task at today's defaults (another task configuration, version
    included, or another step budget), as one phrase; None when it still does."""
    runner = runner or Runner(Settings(progress=False))
    task = runner.task(data["task"])
    now, then = task.config(), data["config"]["task"]
    if then != now:
        if then.get("version") != now.get("version"):
            return f"measured at task version {then.get('version')}, now {now.get('version')}"
        return "measured with other task options"
    steps = runner.settings.train_config(task).steps
    return None if data["budget_steps"] == steps else f"measured at {data['budget_steps']} steps, now {steps}"


def run(tasks_spec: str, encs: Sequence[str], seeds: int, out: Path) -> int:
    """Measure each task of ``tasks_spec`` into ``out/<task>.json`` (a task already there is skipped unless it is
    :func:`stale`, then measured again), then print the table of every file in ``out`` that is not stale."""
    out.mkdir(parents=True, exist_ok=True)
    runner = Runner(Settings(progress=False))
    for task_name in [t for t in tasks_spec.split(",") if t]:
        path = out / f"{task_name}.json"
        if path.exists() and stale(json.loads(path.read_text()), runner) is None:
            continue
        data = measure(task_name, encs, seeds)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1))
        tmp.replace(path)
    fresh: list[Path] = []
    left_out: list[str] = []
    for path in sorted(out.glob("*.json")):
        if (why := stale(json.loads(path.read_text()), runner)) is None:
            fresh.append(path)
        else:
            left_out.append(f"{path.stem} ({why})")
    print(table(fresh))
    if left_out:
        print("\nLeft out, to be measured again: " + ", ".join(left_out) + ".")
    return 0


def parser() -> argparse.ArgumentParser:
    """The script's command-line options."""
    p = argparse.ArgumentParser(prog="studies/stop_verdicts/verdicts.py", description=__doc__.splitlines()[0])
    p.add_argument("tasks", nargs="?", default="", metavar="T1,T2|all",
                   help="train --encodings x --k seeds of each task to its budget and compare the verdicts with those "
                        "of the same models stopped when learned (--stop learned); one JSON per task in --out (a task "
                        "whose file is there and current is not measured again), then the table of every file there "
                        "(studies/stop_verdicts/README.md); none: only the table")  # fmt: skip
    p.add_argument("--encodings", metavar="E1,E2|all",
                   help="encodings to train (default: nope,sinusoidal,learned,rope,alibi)")  # fmt: skip
    p.add_argument("--k", type=int, default=3, metavar="K", help="seeds per model (default 3)")
    p.add_argument("--out", default="studies/stop_verdicts", metavar="DIR",
                   help="directory of the JSON files (default studies/stop_verdicts)")  # fmt: skip
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """The script's exit status: 0, or 2 after a one-line error (an unknown task or encoding)."""
    from pebench.analysis.spread import CORE_ENCODINGS
    from pebench.bench.tasks import resolve_names
    from pebench.store.database import safe_url

    args = parser().parse_args(argv)
    try:
        names = resolve_names(args.tasks, "task") if args.tasks.strip() else []
        encs = resolve_names(args.encodings, "encoding") if args.encodings else list(CORE_ENCODINGS)
        return run(",".join(names), encs, args.k, Path(args.out))
    except PebenchError as err:
        print(f"verdicts.py: error: {safe_url(str(err))}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
