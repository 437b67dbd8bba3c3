"""When is a difference larger than the noise? No single-seed winners.

A cell, a task's column or the leaderboard marks one encoding as best only when it beats *every* other encoding
beyond the noise (:func:`marked_best`); otherwise nothing is marked -- a tie. Comparisons are on normalised scores
(:meth:`pebench.metrics.Metric.normalise`: 0 = chance, 1 = perfect; higher is better), one value per seed:

* **several seeds on both sides**: the two 95% Student-t intervals of the per-seed values separate (the best one's
  lower end above the other's upper end; :func:`pebench.analysis.stats.t_interval` -- with few seeds wider than the
  BCa intervals the leaderboard shows, so on the safe side);
* **several seeds on one side only**: the same separation, the single seed's interval being ``± 1.96 * sigma``
  around it (the side with seeds keeps its own t-interval: a cell whose seeds spread widely is not marked against a
  single seed on the measured spread alone, which more seeds would then call a tie);
* **otherwise** (one seed on each side): the difference of the means exceeds ``1.96 * sigma * sqrt(1/n_a + 1/n_b)``,
  with ``sigma`` the task's seed-to-seed standard deviation of one result's normalised score -- measured once for the
  core encodings at the default configuration and shipped as data (``pebench/data/seed_spread.json``, with its
  provenance; :func:`measure_spread` computes it and ``pebench seed-spread`` regenerates it). A task without a
  measured spread *for the configuration it ran with* (:func:`protocol_hash`) has no single-seed marks at all.

The measured ``sigma`` of a task is the pooled (root-mean-square) standard deviation over seeds, across the core
encodings and the evaluated lengths: for a pair of single-seed scores the threshold is then 1.96 * sqrt(2) * sigma.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pebench import encodings
from pebench.analysis.scoring import add_normalised, finite, learned_verdict, mean
from pebench.analysis.stats import t_interval
from pebench.errors import UnknownNameError
from pebench.hashing import config_hash
from pebench.models import ModelConfig

if TYPE_CHECKING:
    import pandas as pd

SPREAD_FILE = Path(__file__).resolve().parents[1] / "data" / "seed_spread.json"
Z95 = 1.959964
PROTOCOL_KEYS = ("task", "model", "train", "eval")
"""The parts of a case's config that the seed-to-seed spread depends on (not the encoding)."""


def protocol_hash(config: Mapping[str, Any], lr_grid: str | None = None) -> str:
    """The hash of a config's task, model, training and evaluation settings (everything but the encoding).

    With ``lr_grid`` (the rates of the learning-rate protocol, :mod:`pebench.analysis.lr`; ``config`` one of its
    cells at its chosen rate) the learning rate is the grid, not the one rate chosen: each cell of such a run has its
    own rate, and the spread of the chosen cells is that of the protocol.

    An encoding's own default depth (:attr:`~pebench.encodings.PositionalEncoding.default_layers`, e.g. NoPE's 6
    blocks) counts as the global default depth, so that one default run has one protocol for every encoding.

    The stop rule (``train.stop``, ``--stop learned|plateau``) is not part of it: a stopped model is its budget run's
    model at an earlier curve point, and the measured spread of the stopped side is at most the budget side's (the
    stop-verdict files of ``studies/stop_verdicts``: pooled seed sd stop <= budget on each of 22 tasks, e.g. sort
    0.049 vs 0.064, even_pairs 0.115 vs 0.135, equal elsewhere within 0.003), so the budget-measured sigma is the
    conservative one for both."""
    parts = {k: config.get(k) for k in PROTOCOL_KEYS}
    if isinstance(parts.get("train"), Mapping) and "stop" in parts["train"]:
        parts["train"] = {k: v for k, v in parts["train"].items() if k != "stop"}
    if lr_grid is not None and isinstance(parts.get("train"), Mapping):
        parts["train"] = {**{k: v for k, v in parts["train"].items() if k != "lr"}, "lr_grid": lr_grid}
    model, encoding = parts.get("model"), config.get("encoding")
    if isinstance(model, Mapping) and isinstance(encoding, Mapping):
        own = _own_default_layers(str(encoding.get("name")))
        if own is not None and model.get("n_layers") == own:
            parts["model"] = {**model, "n_layers": ModelConfig.n_layers}
    return config_hash(parts)


def _own_default_layers(name: str) -> int | None:
    try:
        return encodings.get(name).default_layers
    except UnknownNameError:  # an encoding no longer registered: its depth is taken as stored
        return None


@lru_cache(maxsize=4)
def _load(path: str) -> dict[str, Any]:
    p = Path(path)
    return json.loads(p.read_text()) if p.is_file() else {"tasks": {}}


def spread_data(path: Path | None = None) -> dict[str, Any]:
    """The shipped seed-spread data: ``{"provenance": {"what", "regenerate"}, "tasks": {task: [{"sigma", "protocol",
    ..., "provenance": {run, commit, device, ...}}, ...]}}``: per task one entry per protocol it was measured at (the
    one-rate protocol of the nightly and the default learning-rate protocol of the reference differ), each with the
    provenance of the run that measured it. A task may also map to one entry (the format before 2026-11-26)."""
    return _load(str(path or SPREAD_FILE))


def task_entries(task: str, data: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """The measured spread entries of ``task`` in ``data`` (default: the shipped data), one per protocol."""
    entry = (data or spread_data())["tasks"].get(task)
    return [] if entry is None else [entry] if isinstance(entry, Mapping) else list(entry)


def task_sigma(task: str, config: Mapping[str, Any] | None, data: Mapping[str, Any] | None = None,
               lr_grid: str | None = None) -> float | None:  # fmt: skip
    """The measured seed-to-seed sigma of ``task``, if it was measured with ``config``'s protocol (with ``lr_grid``:
    a cell of that learning-rate protocol, :func:`protocol_hash`), else None."""
    if not isinstance(config, Mapping):
        return None
    protocol = protocol_hash(config, lr_grid)
    return next((float(e["sigma"]) for e in task_entries(task, data) if e.get("protocol") == protocol), None)


def beyond_noise(a: Sequence[float], b: Sequence[float], sigma: float | None) -> bool:
    """Whether the per-seed normalised scores ``a`` beat ``b`` beyond the noise (see the module's rules)."""
    if not a or not b:
        return bool(a)
    mean_a, half_a, n_a = t_interval(a)
    mean_b, half_b, n_b = t_interval(b)
    if half_a is not None and half_b is not None:
        return mean_a - half_a > mean_b + half_b
    if sigma is None:
        return False
    if half_a is not None or half_b is not None:  # one side has its own interval, the other one seed
        return mean_a - (half_a if half_a is not None else Z95 * sigma) > \
            mean_b + (half_b if half_b is not None else Z95 * sigma)  # fmt: skip
    return mean_a - mean_b > Z95 * sigma * math.sqrt(1 / n_a + 1 / n_b)


def marked_best(samples: Sequence[Sequence[float]], sigma: float | None, digits: int | None = None) -> list[bool]:
    """Which candidate is marked best: the one of highest mean per-seed normalised score, and only when it beats
    every other candidate with a score beyond the noise (and, with ``digits``, is not tied with one at that
    precision). At most one True; none with fewer than two candidates."""
    clean = [[float(v) for v in s if finite(v)] for s in samples]
    present = [i for i, s in enumerate(clean) if s]
    out = [False] * len(samples)
    if len(present) < 2:
        return out
    means = {i: sum(clean[i]) / len(clean[i]) for i in present}
    top = max(present, key=lambda i: means[i])
    for j in present:
        if j == top:
            continue
        if digits is not None and round(means[top], digits) == round(means[j], digits):
            return out
        if not beyond_noise(clean[top], clean[j], sigma):
            return out
    out[top] = True
    return out


def cell_verdicts(per: Mapping[str, Mapping[int, Mapping[int, float]]], train_length: int, sigma: float | None,
                  used: Mapping[str, int] | None = None) -> tuple[dict[str, str], dict[int, str | None]]:
    """(encoding -> learned / partly / not learned, evaluated length -> the marked winner or None) of one task's
    normalised scores ``per`` (encoding -> length -> seed -> score): the verdict of the mean over seeds at
    ``train_length`` (:func:`pebench.analysis.scoring.learned_verdict`) and :func:`marked_best` per length with the
    task's spread ``sigma``; with ``used``, on each encoding's first ``used[encoding]`` seeds only."""
    encs = sorted(per)

    def values(e: str, L: int) -> list[float]:
        return [v for s, v in sorted(per[e].get(L, {}).items()) if used is None or s < used[e]]

    learned = {e: str(learned_verdict(mean(values(e, train_length)))) for e in encs}
    winners: dict[int, str | None] = {}
    for L in sorted({L for e in encs for L in per[e]}):
        flags = marked_best([values(e, L) for e in encs], sigma)
        winners[L] = encs[flags.index(True)] if any(flags) else None
    return learned, winners


def measure_spread(df: pd.DataFrame, lr_grid: str | None = None) -> dict[str, dict[str, Any]]:
    """Per task of a run with several seeds: ``sigma`` (pooled standard deviation over seeds of one result's
    normalised score, across encodings and evaluated lengths), the number of seeds, the encodings and lengths it
    pooled, the largest per-(encoding, length) standard deviation, and the protocol hash of its config (with
    ``lr_grid``, ``df`` holds a learning-rate sweep's cells at their chosen rates: that protocol's hash)."""
    df = add_normalised(df)
    df = df[df["norm"].notna()]
    out: dict[str, dict[str, Any]] = {}
    for task, g in df.groupby("task"):
        variances, worst = [], 0.0
        for _, cell in g.groupby(["encoding", "eval_length"]):
            vals = cell.drop_duplicates("seed", keep="last")["norm"].astype(float)
            if len(vals) >= 2:
                variances.append(float(vals.var(ddof=1)))
                worst = max(worst, math.sqrt(variances[-1]))
        protocols = {protocol_hash(c, lr_grid) for c in g["config"]}
        if not variances or len(protocols) != 1:
            continue
        seeds = sorted(set(g["seed"]))
        out[str(task)] = {
            "sigma": round(math.sqrt(sum(variances) / len(variances)), 6),
            "max_sd": round(worst, 6),
            "seeds": len(seeds),
            "encodings": sorted(set(g["encoding"])),
            "lengths": sorted(int(v) for v in set(g["eval_length"])),
            "protocol": protocols.pop(),
        }
    return out


def spread_table(tasks: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Lines for the terminal: task, sigma, the single-seed threshold for a pair, seeds, encodings."""
    lines = [f"{'task':<18} {'sigma':>7} {'pair threshold':>14} {'seeds':>5}  encodings"]
    by_task: dict[str, Any] = defaultdict(dict, tasks)
    for task in sorted(by_task):
        t = by_task[task]
        threshold = Z95 * math.sqrt(2) * t["sigma"]
        lines.append(f"{task:<18} {t['sigma']:>7.4f} {threshold:>14.4f} {t['seeds']:>5}  {','.join(t['encodings'])}")
    return lines
