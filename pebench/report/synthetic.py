"""Synthetic results databases, for testing and timing the report without training any model.

Scores come from a simple generative rule (an encoding's quality, decaying with the ratio of evaluation to training
length, plus seed noise), so pages look like real ones; they are never presented as benchmark results. Rows go in
with bulk inserts through the schema of :mod:`pebench.store.schema`.

``python -m pebench.report.synthetic --results 10000 --out /tmp/lb.html`` builds a database of 10,000 results and times
the rendering of its leaderboard; ``--all-encodings`` instead builds every registered encoding on two tasks (the
page a full run of the suite's encodings gives); ``--field`` 60 encodings x 50 tasks (a field's size, issue 65).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import insert

from pebench import metrics as metric_registry
from pebench.case import Case
from pebench.hashing import config_hash
from pebench.records.record import curve_row
from pebench.status import ResultStatus, RunStatus
from pebench.store import database as db
from pebench.store.schema import RESULT_FIELDS, CurvePoint, Result

RUN_INFO = {
    "package_version": "0.1.0",
    "torch_version": "synthetic",
    "python_version": "3",
    "device": "cpu:synthetic",
    "host": "synthetic",
    "git_commit": "0123456789abcdef0123456789abcdef01234567",
    "git_dirty": False,
    "tier": "quick",
}


@dataclass
class SynthTask:
    name: str
    train_length: int = 64
    lengths: tuple[int, ...] = (64, 128, 256)
    metric: str = "accuracy"
    chance: float = 0.1
    vocab: int = 16
    splits: tuple[str, ...] = ("test",)


@dataclass
class SynthSpec:
    encodings: Sequence[str]
    tasks: Sequence[SynthTask]
    seeds: int = 1
    curve_points: int = 20
    attention: bool = True
    heads: int = 4
    attention_tokens: int = 32
    steps: int = 600
    d_model: int = 128
    statuses: dict[tuple[str, str, int, int], tuple[str, str]] = field(default_factory=dict)
    """(encoding, task, length, seed) -> (status, message) for cases that did not finish ok."""
    skip: frozenset[tuple[str, str]] = frozenset()
    """(encoding, task) pairs without results, as a run has none for an encoding that does not apply to a task."""

    @property
    def n_results(self) -> int:
        lengths = sum(len(t.lengths) for e in self.encodings for t in self.tasks if (e, t.name) not in self.skip)
        return lengths * self.seeds


def _quality(name: str) -> tuple[float, float]:
    """A stable (in-distribution quality, length decay) per encoding name."""
    h = sum((i + 1) * ord(c) for i, c in enumerate(name))
    return 0.55 + 0.45 * ((h % 97) / 96), 0.05 + 0.4 * ((h % 89) / 88)


def validation(point: dict[str, Any], metric: str, higher_is_better: bool, encoding: str) -> dict[str, float]:
    """A curve point's synthetic validation values at 1x and 2x the training length, from its training loss or
    accuracy and the encoding's length decay."""
    decay = _quality(encoding)[1]
    if higher_is_better:
        v1 = 0.97 * point["accuracy"]
        return {f"val_{metric}_1x": v1, f"val_{metric}_2x": v1 * max(0.0, 1 - decay)}
    v1 = 1.05 * math.exp(point["loss"])
    return {f"val_{metric}_1x": v1, f"val_{metric}_2x": v1 * (1 + decay)}


def _config(spec: SynthSpec, enc: str, task: SynthTask) -> dict[str, Any]:
    """The stored configuration of ``enc`` on ``task``."""
    return {
        "encoding": {"name": enc, "version": "1", "options": {}},
        "task": {"name": task.name, "version": "1", "options": {}},
        "model": {"vocab_size": task.vocab, "d_model": spec.d_model, "n_layers": 2, "n_heads": spec.heads},
        "train": {"steps": spec.steps, "batch_size": 64, "lr": 0.003},
        "eval": {"samples": 256},
    }


def _curve(spec: SynthSpec, task: SynthTask, enc: str, quality: float, higher_is_better: bool
           ) -> list[dict[str, Any]]:  # fmt: skip
    """A learning curve of ``spec.curve_points`` points rising with the encoding's ``quality``, with validation."""
    curve = [
        {"step": int(spec.steps * (i + 1) / spec.curve_points),
         "loss": math.log(task.vocab) * math.exp(-3 * quality * (i + 1) / spec.curve_points) + 0.05,
         "accuracy": min(1.0, quality * (i + 1) / spec.curve_points)}
        for i in range(spec.curve_points)
    ]  # fmt: skip
    for point in curve:  # no draw from rng: the other values stay as they were
        point.update(validation(point, task.metric, higher_is_better, enc))
    return curve


def _splits(task: SynthTask, higher_is_better: bool, q: float, ratio: float) -> dict[str, dict[str, Any]]:
    """Each evaluation split's metrics at quality ``q`` (later splits lose more with the length ``ratio``)."""
    splits = {}
    for i, split in enumerate(task.splits):
        qs = min(1.0, max(0.0, q - 0.05 * i * ratio))
        if higher_is_better:
            acc = task.chance + (1 - task.chance) * qs
            loss = -math.log(max(acc, 1e-3))
        else:
            loss = math.log(task.vocab) * (1 - 0.7 * qs)
            acc = qs * 0.6
        splits[split] = {"loss": loss, "token_accuracy": acc, "sequence_accuracy": acc**4,
                         "perplexity": math.exp(loss), "n_samples": 256, "n_scored": 256}  # fmt: skip
    return splits


def _attention(spec: SynthSpec, rng: np.random.Generator) -> dict[str, Any]:
    """An attention snapshot (the form of :mod:`pebench.records.attention`): per head, the softmax of a per-head
    distance penalty plus noise drawn from ``rng``."""
    t = spec.attention_tokens
    heads = []
    dist = np.arange(t)[:, None] - np.arange(t)[None, :]
    for h in range(spec.heads):
        logits = -(0.05 + 0.5 * h) * dist + rng.normal(0, 0.5, (t, t))
        w = np.exp(np.where(dist >= 0, logits, -np.inf))
        w = np.rint(1000 * w / w.sum(axis=1, keepdims=True)).astype(int).tolist()
        heads.append([row[: i + 1] for i, row in enumerate(w)])
    return {"layer": 1, "tokens": list(range(t)), "scale": 1000, "heads": heads}


def _record(spec: SynthSpec, enc: str, task: SynthTask, config: dict[str, Any], length: int, seed: int,
            quality: float, curve: list[dict[str, Any]], metrics: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    """The record of ``enc`` on ``task`` at ``length`` and ``seed``, with its status from ``spec.statuses`` and its
    scores from the first split of ``metrics`` when ok."""
    metric = metric_registry.get(task.metric)
    status, message = spec.statuses.get((enc, task.name, length, seed), (ResultStatus.OK, ""))
    rec = {
        "case_id": Case(enc, task.name, length).id,
        "encoding": enc,
        "encoding_version": "1",
        "task": task.name,
        "task_version": "1",
        "train_length": task.train_length,
        "eval_length": length,
        "seed": seed,
        "config": config,
        "config_hash": config_hash(config),
        "code_version": "synthetic",
        "status": status,
        "message": message,
        "metric": task.metric,
        "higher_is_better": metric.higher_is_better,
        "chance_level": task.chance,
        "train_steps": spec.steps,
        "train_time_s": 30.0 + 10 * quality,
        "tokens_per_s": 1e5,
        "final_train_loss": curve[-1]["loss"],
        "eval_time_s": 0.5,
        "model_reused": length != task.lengths[0],
        "metrics": metrics if status == ResultStatus.OK else {},
        "curve": curve,
    }
    if status == ResultStatus.OK:
        main = metrics["splits"][task.splits[0]]
        rec.update(score=main[metric.key], loss=main["loss"], token_accuracy=main["token_accuracy"],
                   sequence_accuracy=main["sequence_accuracy"])  # fmt: skip
    return rec


def records(spec: SynthSpec, run_offset: float = 0.0, rng_seed: int = 0) -> list[dict[str, Any]]:
    """One record per (encoding, task, length, seed), shaped like :meth:`pebench.engine.runner.Runner.run`'s."""
    rng = np.random.default_rng(rng_seed)
    out = []
    for enc in spec.encodings:
        quality, decay = _quality(enc)
        for task in spec.tasks:
            if (enc, task.name) in spec.skip:
                continue
            higher_is_better = metric_registry.get(task.metric).higher_is_better
            config = _config(spec, enc, task)
            for seed in range(spec.seeds):
                noise_q = float(rng.normal(0, 0.03))
                curve = _curve(spec, task, enc, quality, higher_is_better)
                for length in task.lengths:
                    ratio = max(0.0, math.log2(length / task.train_length))
                    q = min(1.0, max(0.0, quality + noise_q + run_offset - decay * ratio))
                    metrics: dict[str, Any] = {"splits": _splits(task, higher_is_better, q, ratio)}
                    if spec.attention and length == task.train_length:
                        metrics["attention"] = _attention(spec, rng)
                    out.append(_record(spec, enc, task, config, length, seed, quality, curve, metrics))
    return out


def write_run(engine: Any, recs: Sequence[dict[str, Any]], info: dict[str, Any] | None = None) -> int:
    """A finished run holding ``recs`` (and their learning curves), written with bulk inserts; returns its id."""
    run_id = db.start_run(engine, dict(RUN_INFO, **(info or {})))
    with db.session_scope(engine) as s:
        start = (s.query(Result.id).order_by(Result.id.desc()).limit(1).scalar() or 0) + 1
        rows, points = [], []
        for i, rec in enumerate(recs):
            rid = start + i
            row = {k: rec[k] for k in RESULT_FIELDS if k in rec}
            rows.append({"id": rid, "run_id": run_id, **row})
            for p in rec.get("curve") or []:
                points.append({"result_id": rid, **curve_row(p)})
        if rows:
            s.execute(insert(Result), rows)
        if points:
            s.execute(insert(CurvePoint), points)
    db.finish_run(engine, run_id, RunStatus.FINISHED)
    return run_id


def standard_spec(n_results: int = 10_000) -> SynthSpec:
    """Up to 20 encodings x 10 tasks x 5 lengths, seeds filling up to ``n_results`` (at least one seed)."""
    tasks = [
        SynthTask(f"task{i:02d}", 64, (64, 128, 256, 512, 1024), chance=1 / (2 + i), vocab=16 + i)
        for i in range(8)
    ]
    tasks.append(SynthTask("passkey_like", 128, (128, 256, 512, 1024, 2048), chance=0.1, vocab=14,
                           splits=tuple(f"depth{d:.2f}" for d in (0, 0.25, 0.5, 0.75, 1.0))))  # fmt: skip
    tasks.append(SynthTask("lm_like", 128, (128, 256, 512, 1024, 2048), metric="perplexity",
                           chance=260.0, vocab=260))  # fmt: skip
    encodings = [f"enc{i:02d}" for i in range(20)]
    per_seed = len(encodings) * sum(len(t.lengths) for t in tasks)
    return SynthSpec(encodings, tasks, seeds=max(1, n_results // per_seed))


def all_encodings_spec(seeds: int = 3) -> SynthSpec:
    """Every registered encoding on two tasks: an accuracy task at training length 64 and a perplexity one at 128,
    except where an encoding does not apply to the task (it needs annotations the task does not provide), as in a
    real run."""
    from pebench import encodings
    from pebench import tasks as task_registry

    tasks = [
        SynthTask("k_back", 64, (32, 64, 128, 256, 512, 1024), chance=0.02, vocab=52),
        SynthTask("lm", 128, (128, 256, 512, 1024), metric="perplexity", chance=260.0, vocab=260),
    ]
    names = encodings.available()
    skip = frozenset((e, t.name) for e in names for t in tasks
                     if encodings.not_applicable(e, task_registry.get(t.name)) is not None)  # fmt: skip
    return SynthSpec(names, tasks, seeds=seeds, skip=skip)


def field_spec(n_encodings: int = 60, n_tasks: int = 50, lengths: Sequence[int] = (64, 128, 256),
               curve_points: int = 20) -> SynthSpec:  # fmt: skip
    """A field's size (issue 65): the registered encodings and tasks, padded with made-up names (``extra_enc_NN``,
    ``extra_task_NN``) up to ``n_encodings`` x ``n_tasks``; one seed, no attention maps, ``lengths`` (the first is
    the training length); as in a real run, no results where an encoding does not apply to a task."""
    from pebench import encodings
    from pebench import tasks as task_registry

    names = (list(encodings.available()) + [f"extra_enc_{i:02d}" for i in range(n_encodings)])[:n_encodings]
    task_names = (list(task_registry.available()) + [f"extra_task_{i:02d}" for i in range(n_tasks)])[:n_tasks]
    tasks = [SynthTask(t, lengths[0], tuple(lengths), metric="perplexity" if t == "lm" else "accuracy",
                       chance=260.0 if t == "lm" else 0.1, vocab=260 if t == "lm" else 16)
             for t in task_names]  # fmt: skip
    skip = frozenset((e, t) for e in names if e in encodings.available() for t in task_names
                     if t in task_registry.available()
                     and encodings.not_applicable(e, task_registry.get(t)) is not None)  # fmt: skip
    return SynthSpec(names, tasks, seeds=1, curve_points=curve_points, attention=False, skip=skip)


def main(argv: Sequence[str] | None = None) -> int:
    from pebench.report.page import render_report

    p = argparse.ArgumentParser(prog="python -m pebench.report.synthetic", description=__doc__.splitlines()[0])
    p.add_argument("--results", type=int, default=10_000, help="number of results (default 10000)")
    p.add_argument("--db", default=None, help="database URL (default: a new file beside --out)")
    p.add_argument("--out", default="synthetic-leaderboard.html")
    p.add_argument("--all-encodings", action="store_true", help="every registered encoding on two tasks instead")
    p.add_argument("--field", action="store_true", help="60 encodings x 50 tasks (the registered ones and made-up "
                   "names), one seed, instead")  # fmt: skip
    args = p.parse_args(argv)
    out = Path(args.out)
    url = args.db or f"sqlite:///{out.with_suffix('.db')}"
    if args.db is None and out.with_suffix(".db").exists():
        out.with_suffix(".db").unlink()
    spec = all_encodings_spec() if args.all_encodings else field_spec() if args.field else standard_spec(args.results)
    t0 = time.perf_counter()
    engine = db.open_db(url)
    write_run(engine, records(spec, 0.0, 1))
    write_run(engine, records(spec, 0.02, 2))  # the rendered run, with a previous comparable one for deltas
    engine.dispose()
    t1 = time.perf_counter()
    info = render_report(url, out, "latest")
    print(f"database: {spec.n_results} results per run x 2 runs ({db.safe_url(url)}) written in {t1 - t0:.1f} s")
    print(f"report: {info.path} {info.size_bytes / 1e6:.2f} MB, {info.n_results} results rendered in "
          f"{info.seconds:.2f} s")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
