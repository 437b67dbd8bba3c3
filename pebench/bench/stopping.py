"""``pebench bench --stop-verdicts``: do the verdicts hold when models stop when learned? (issue 28, item 5)

A model stopped by :class:`~pebench.stopping.StopRule` has exactly the weights its budget run had at that step (same
data, same schedule), so one budget run gives both sides: each (encoding, task, seed) is trained to its budget at the
defaults, a copy of its weights is taken at the first curve point where the rule fires (through
:func:`pebench.training.train`'s ``on_point``), and both models are evaluated at the quick tier's lengths as the
suite evaluates them (the task's first evaluation split, its score). Per task one JSON file is written (per seed
and encoding: the scores of both sides, the steps each took, the stop reason, the wall time of the budget run),
so a long measurement survives in parts; ``--stop-table`` turns the files into the comparison: per cell the
learned / partly / not-learned verdict of the mean over seeds (:func:`pebench.analysis.scoring.learned_verdict`)
and per evaluated length the marked winner (:func:`pebench.analysis.noise.marked_best` with the task's measured
spread), budget vs stop, the cells and columns that differ, and the steps (the CPU cost of training) of each side.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from pebench import metrics
from pebench.analysis import noise, scoring
from pebench.runner import Case, Runner
from pebench.settings import Settings
from pebench.stopping import StopRule
from pebench.training import TrainInfo, evaluate, train


def _scores(runner: Runner, model: torch.nn.Module, task_name: str, seed: int) -> dict[int, float]:
    task = runner.task(task_name)
    s = runner.settings
    return {L: task.score(evaluate(model, task, L, task.eval_splits[0], s.eval_samples, seed, runner.device,  # type: ignore[arg-type]
                                   s.eval_batch_size)) for L in task.eval_lengths("quick")}  # fmt: skip


def measure(task_name: str, encs: Sequence[str], seeds: int, rule: str = "learned",
            settings: Settings | None = None) -> dict[str, Any]:  # fmt: skip
    """Budget and stopped results of ``encs`` x ``seeds`` on one task at the defaults (or ``settings``; see the module
    docstring)."""
    runner = Runner(settings or Settings(progress=False))
    stop = StopRule(rule)
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
            snap: dict[str, Any] = {}

            def on_point(info: TrainInfo, model: torch.nn.Module = model, snap: dict[str, Any] = snap) -> None:
                if not snap and (why := stop.check(info.curve, info.steps, budget.steps)) is not None:
                    snap.update(state=copy.deepcopy(model.state_dict()), steps=info.steps, reason=why)

            start, cpu = time.perf_counter(), time.process_time()
            info = train(model, task, budget, seed=seed, device=runner.device, progress=False, on_point=on_point)
            wall, cpu = time.perf_counter() - start, time.process_time() - cpu
            full = _scores(runner, model, task_name, seed)
            if snap:
                model.load_state_dict(snap["state"])
                stopped = _scores(runner, model, task_name, seed)
            else:
                stopped = full
            rows.append({"encoding": enc, "seed": seed, "budget": full, "stop": stopped, "status": info.status,
                         "budget_steps": info.steps, "stop_steps": snap.get("steps", info.steps),
                         "stop_reason": snap.get("reason", "budget"), "train_wall_s": round(wall, 2),
                         "train_cpu_s": round(cpu, 2)})  # fmt: skip
            print(f"{task_name} {enc} s{seed}: {info.steps} -> {rows[-1]['stop_steps']} steps "
                  f"({rows[-1]['stop_reason']}), at {task.train_length}: {full[task.train_length]:.3f} -> "
                  f"{stopped[task.train_length]:.3f}", flush=True)  # fmt: skip
    m = task.metric
    return {"task": task_name, "train_length": task.train_length, "metric": m, "chance": task.chance_level,
            "higher_is_better": task.higher_is_better, "vocab_size": task.vocab_size, "rule": stop.to_dict(),
            "budget_steps": budget.steps, "config": config, "threads": torch.get_num_threads(),
            "rows": rows}  # fmt: skip


def verdicts(data: dict[str, Any], side: str) -> tuple[dict[str, str], dict[int, str | None]]:
    """(encoding -> learned / partly / not learned, length -> the marked winner or None) of one side."""
    m = metrics.of_result(data["metric"], data["higher_is_better"])
    sigma = noise.task_sigma(data["task"], data["config"])

    def norm(score: float) -> float | None:
        return scoring.normalised(score, m, data["chance"], "ok", data["vocab_size"])

    encs = sorted({r["encoding"] for r in data["rows"]})
    lengths = sorted({int(L) for r in data["rows"] for L in r[side]})
    per: dict[str, dict[int, list[float]]] = {e: {L: [] for L in lengths} for e in encs}
    for r in data["rows"]:
        for L, v in r[side].items():
            if (n := norm(v)) is not None:
                per[r["encoding"]][int(L)].append(n)
    learned = {e: scoring.learned_verdict(scoring.mean(per[e][data["train_length"]])) for e in encs}
    winners = {}
    for L in lengths:
        flags = noise.marked_best([per[e][L] for e in encs], sigma)
        winners[L] = encs[flags.index(True)] if any(flags) else None
    return learned, winners


def table(paths: Sequence[Path]) -> str:
    """The markdown comparison of the JSON files ``paths`` (see the module docstring)."""
    lines = ["| task | seeds | verdict of each encoding, budget -> stop | marked winner per length, budget -> stop | "
             "training steps, budget -> stop |", "|---|---|---|---|---|"]
    cells = same_cells = cols = same_cols = 0
    steps_old = steps_new = 0
    for path in sorted(paths):
        data = json.loads(path.read_text())
        old_v, old_w = verdicts(data, "budget")
        new_v, new_w = verdicts(data, "stop")
        encs = list(dict.fromkeys(r["encoding"] for r in data["rows"]))
        v_text = ", ".join(f"{e} {old_v[e]}" + ("" if old_v[e] == new_v[e] else f" -> **{new_v[e]}**") for e in encs)
        w_text = ", ".join(f"{L}: {old_w[L] or 'tie'}"
                           + ("" if old_w[L] == new_w[L] else f" -> **{new_w[L] or 'tie'}**")
                           for L in sorted(old_w))  # fmt: skip
        s_old = sum(r["budget_steps"] for r in data["rows"])
        s_new = sum(r["stop_steps"] for r in data["rows"])
        steps_old, steps_new = steps_old + s_old, steps_new + s_new
        cells += len(encs)
        same_cells += sum(old_v[e] == new_v[e] for e in encs)
        cols += len(old_w)
        same_cols += sum(old_w[L] == new_w[L] for L in old_w)
        seeds = len({r["seed"] for r in data["rows"]})
        lines.append(f"| {data['task']} | {seeds} | {v_text} | {w_text} | {s_old} -> {s_new} ({s_new / s_old:.2f}) |")
    if cells:
        lines.append(f"\n{same_cells} of {cells} cells keep their verdict, {same_cols} of {cols} columns their marked "
                     f"winner; training steps {steps_old} -> {steps_new} ({steps_new / max(steps_old, 1):.2f}).")
    return "\n".join(lines)


def main(tasks_spec: str, encs: Sequence[str], seeds: int, out: Path) -> int:
    """Measure each task of ``tasks_spec`` into ``out/<task>.json`` (a task already there is skipped), then print the
    table of every file in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    for task_name in [t for t in tasks_spec.split(",") if t]:
        path = out / f"{task_name}.json"
        if path.exists():
            continue
        data = measure(task_name, encs, seeds)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1))
        tmp.replace(path)
    print(table(list(out.glob("*.json"))))
    return 0
