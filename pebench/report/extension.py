"""The report's *Extension by fine-tuning* section (issue 88): the models continued at F times their training length
(``--extend F``, :mod:`pebench.engine.extension`), each method at L, F·L and 2F·L beside its own zero-shot scores
(the from-scratch protocol's, at the same multiples), ranked within the track at F·L with intervals, and the cost of
the fine-tune. Never ranked with the from-scratch protocol.

A method is an encoding at one extension point (``yarn`` at ``ext2x``; ``yarn + PoSE`` at ``pose2x``). Its score at a
multiple is the normalised score (0 = chance, 1 = perfect) averaged over the tasks where the method has all three
lengths: per seed the mean over those tasks, then the mean over seeds with a 95% BCa bootstrap interval
(:func:`pebench.analysis.stats.estimate`). The zero-shot score averages the same tasks' from-scratch results.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

import pandas as pd

from pebench import metrics
from pebench.analysis.scoring import normalised
from pebench.analysis.stats import Estimate, estimate
from pebench.status import ResultStatus

POINT = re.compile(r"(?:^|-)(ext|pose|scaffold)([0-9.]+)x?(?:-|$)")
"""A second phase's point in a result's point text: ``ext2x``, ``pose2x``, ``scaffold0.625``."""


def _point(row: dict[str, Any]) -> tuple[str, str] | None:
    """(the phase, its value as written) of a result's point: ``("ext", "2x")``; None for the from-scratch protocol."""
    axes = row.get("axes")
    if isinstance(axes, list):
        return next(((n, v) for n, v in axes if n in ("ext", "pose", "scaffold")), None)
    m = POINT.search(str(row.get("point") or ""))
    return None if m is None else (m[1], m[2] + ("x" if m[1] != "scaffold" else ""))


def _method(encoding: str, kind: str, value: str) -> tuple[str, float]:
    """The method's label and its factor F (a scaffold run is evaluated at L, 2L, 4L: F = 2)."""
    if kind == "scaffold":
        return f"{encoding} → NoPE at {value}", 2.0
    return encoding + (" + PoSE" if kind == "pose" else ""), float(value.rstrip("x"))


def _norm(row: dict[str, Any]) -> float | None:
    if row["status"] not in (ResultStatus.OK, ResultStatus.DIVERGED):
        return None
    config = row.get("config") if isinstance(row.get("config"), dict) else {}
    return normalised(row["score"], metrics.of_result(row["metric"], row["higher_is_better"]), row["chance_level"],
                      row["status"], (config.get("model") or {}).get("vocab_size"))  # fmt: skip


def _table(rows: list[dict[str, Any]]) -> dict[tuple[str, str, int, float], float]:
    """(encoding, task, seed, multiple) -> normalised score."""
    out = {}
    for r in rows:
        value = _norm(r)
        train, length = int(r["train_length"]), int(r["eval_length"])
        if value is not None and train:
            out[(str(r["encoding"]), str(r["task"]), int(r["seed"]), length / train)] = value
    return out


def _over_tasks(table: dict[tuple[str, str, int, float], float], enc: str, tasks: list[str], multiple: float
                ) -> Estimate | None:  # fmt: skip
    per_seed: dict[int, list[float]] = defaultdict(list)
    for (e, task, seed, m), value in table.items():
        if e == enc and task in tasks and abs(m - multiple) < 1e-9:
            per_seed[seed].append(value)
    full = [sum(v) / len(v) for v in per_seed.values() if len(v) == len(tasks)]
    return estimate(full) if full else None


def _text(e: Estimate | None) -> str:
    if e is None:
        return "–"
    return f"{e.mean:.2f}" if e.n < 2 else f"{e.mean:.2f} [{e.low:.2f}, {e.high:.2f}]"


def extension_view(ext: pd.DataFrame, scratch: pd.DataFrame) -> dict[str, Any] | None:
    """The section's rows, best first at F·L: method, its scores at L, F·L and 2F·L and zero-shot at the same
    multiples (text with intervals), the tasks averaged, the fine-tune's and the base model's mean training time;
    None without extension results."""
    if ext.empty:
        return None
    rows = ext.to_dict("records")
    by_method: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if (found := _point(r)) is not None:
            by_method[(str(r["encoding"]), *found)].append(r)
    zero = _table(scratch.to_dict("records")) if not scratch.empty else {}
    out = []
    for (enc, kind, value), mine in by_method.items():
        label, factor = _method(enc, kind, value)
        table = _table(mine)
        multiples = (1.0, factor, 2 * factor)
        tasks = sorted({t for (_, t, _, _) in table if all(any(k[1] == t and abs(k[3] - m) < 1e-9 for k in table)
                                                             for m in multiples)})  # fmt: skip
        if not tasks:
            continue
        scores = [_over_tasks(table, enc, tasks, m) for m in multiples]
        zero_shot = [_over_tasks(zero, enc, tasks, m) for m in multiples]
        trained = [r for r in mine if int(r["eval_length"]) == int(r["train_length"])]
        tune = [float(r["train_time_s"]) for r in trained if r.get("train_time_s") is not None]
        base = [float(m["base_model"]["train_time_s"]) for m in (r.get("metrics") or {} for r in trained)
                if isinstance(m, dict) and isinstance(m.get("base_model"), dict)]  # fmt: skip
        out.append({
            "method": label, "encoding": enc, "factor": f"{factor:g}",
            "scores": [_text(e) for e in scores], "zero_shot": [_text(e) for e in zero_shot],
            "key": scores[1].mean if scores[1] is not None else -1.0, "n_tasks": len(tasks), "tasks": ", ".join(tasks),
            "seeds": max((e.n for e in scores if e is not None), default=0),
            "tune_s": f"{sum(tune) / len(tune):.3g}" if tune else "–",
            "base_s": f"{sum(base) / len(base):.3g}" if base else "–",
        })  # fmt: skip
    out.sort(key=lambda r: -r["key"])
    for rank, r in enumerate(out, 1):
        r["rank"] = rank
    factors = sorted({r["factor"] for r in out})
    return {"rows": out, "factors": ", ".join(factors)} if out else None
