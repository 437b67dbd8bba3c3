"""The page's header and failures list: provenance and size of what is shown (runs, commit, device, versions,
cases, models and training time) and the cases that did not finish ok."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from pebench.records.frame import MODEL_KEY, point_column
from pebench.status import ResultStatus

MAX_FAILURES_SHOWN = 200


def _joined(values: Iterable[Any]) -> str:
    seen: list[str] = []
    for v in values:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            continue
        text = str(v)
        if text and text not in seen:
            seen.append(text)
    return ", ".join(seen) if seen else "unknown"


def _fmt_duration(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds):
        return "–"
    seconds = float(seconds)
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.2f} h"


def header_info(sel: pd.DataFrame, runs: Sequence[Mapping[str, Any]], mode: str,
                trained_rows: pd.DataFrame | None = None) -> dict[str, Any]:  # fmt: skip
    """Provenance and size of what the page shows (``sel``); the models and training time are those of
    ``trained_rows`` when given: under the learning-rate protocol every rate's models, of which the page shows each
    cell's chosen one, since all of them were trained for it."""
    commits = []
    for r in runs:
        c = r.get("git_commit")
        if c:
            commits.append(f"{c[:10]}{' (dirty)' if r.get('git_dirty') else ''}")
    model_key = list(MODEL_KEY)
    every = sel if trained_rows is None else trained_rows
    trained = every[~every["model_reused"].astype(bool)].drop_duplicates(model_key) if not every.empty else every
    models = every.drop_duplicates(model_key) if not every.empty else every
    statuses = sel["status"].value_counts().to_dict() if not sel.empty else {}
    starts = [r["started_at"] for r in runs if r.get("started_at") is not None]
    ends = [r["finished_at"] for r in runs if r.get("finished_at") is not None]
    return {
        "mode": mode,
        "runs": [
            {
                "id": r["id"],
                "status": r.get("status"),
                "started": _fmt_time(r.get("started_at")),
                "command": r.get("command") or "",  # masked when stored, and again when read (page_data)
            }
            for r in runs
        ],  # fmt: skip
        "date": _fmt_time(min(starts)) if starts else "–",
        "finished": _fmt_time(max(ends)) if ends else "–",
        "commit": ", ".join(dict.fromkeys(commits)) or "unknown",
        "device": _joined(r.get("device") for r in runs),
        "host": _joined(r.get("host") for r in runs),
        "versions": (
            f"pebench {_joined(r.get('package_version') for r in runs)} · torch "
            f"{_joined(r.get('torch_version') for r in runs)} · Python {_joined(r.get('python_version') for r in runs)}"
        ),
        "tier": _joined(r.get("tier") for r in runs),
        "n_cases": int(len(sel)),
        "n_stored": int(len(every)),
        "statuses": ", ".join(f"{n} {s}" for s, n in sorted(statuses.items())),
        "n_models": int(len(models)),
        "n_trained": int(len(trained)),
        "train_time": _fmt_duration(float(trained["train_time_s"].fillna(0).sum()) if len(trained) else 0.0),
        "all_train_time": _fmt_duration(float(models["train_time_s"].fillna(0).sum()) if len(models) else 0.0),
        "n_encodings": int(sel["encoding"].nunique()) if not sel.empty else 0,
        "not_shown": not_shown(sel, runs),
        "n_tasks": int(sel.groupby(["task", "train_length"]).ngroups) if not sel.empty else 0,
        "n_seeds": int(sel["seed"].nunique()) if not sel.empty else 0,
        # per sweep point: the learning-rate protocol's cells differ in rate (and hash) by design
        "n_configs": int(sel.assign(point=point_column(sel)).groupby(["encoding", "task", "point"])[
            "config_hash"].nunique().max()) if not sel.empty else 0,  # fmt: skip
    }


def not_shown(sel: pd.DataFrame, runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line each for the encodings the shown runs asked for (their ``--encoding``, ``all`` read as every
    registered one) that have no result on the page, saying why: that it applies to none of the tasks shown
    (:func:`pebench.encodings.not_applicable`'s reason for the first of them), else that no case of it is shown
    (deselected, or not run). Encodings this pebench does not know (another environment's plugins) are left out."""
    from pebench import encodings, tasks

    asked: list[str] = []
    for r in runs:
        given = str((r.get("options") or {}).get("encoding") or "")
        names = encodings.available() if given.strip() == "all" else [n.strip() for n in given.split(",")]
        asked += [n for n in names if n and n not in asked and n in encodings.available()]
    shown = set(sel["encoding"]) if not sel.empty else set()
    task_names = [t for t in dict.fromkeys(sel["task"]) if t in tasks.available()] if not sel.empty else []
    out = []
    for name in asked:
        if name in shown:
            continue
        reasons = [encodings.not_applicable(name, tasks.get(t)) for t in task_names]
        if task_names and all(reasons):
            out.append(f"{reasons[0]}{' (nor any other task shown)' if len(reasons) > 1 else ''}")
        else:
            out.append(f"{name}: no case of it shown")
    return out


def _fmt_time(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, pd.Timestamp):
        value = value.to_pydatetime()
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M UTC")
    return str(value)


def failures(sel: pd.DataFrame) -> tuple[list[dict[str, Any]], int]:
    bad = sel[sel["status"] != ResultStatus.OK] if not sel.empty else sel
    rows = [
        {"case_id": r["case_id"], "seed": int(r["seed"]), "status": r["status"], "message": r["message"] or ""}
        for r in bad.head(MAX_FAILURES_SHOWN).to_dict("records")
    ]
    return rows, int(len(bad))
