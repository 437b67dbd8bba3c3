"""The answer of the second scale (issue 69) as text: what the page's "Across scale" section shows, for the note, the
README and this study's README.

    python3 studies/scale2/answer.py [DB_URL]      # default: the shipped reference

It builds the page's context for ``--run all`` (pebench.report.data.build_context: the size runs set aside, the
leaderboard's cells at their chosen rates beside them) and prints, per larger model: the sentence, Kendall's tau-b
overall and per task with their intervals, each compared encoding's rank and range at both sizes and whether it
moved, the leaders at both sizes, the like-for-like comparison at the larger run's one rate, and the training
CPU-hours the larger run's models stored.
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

from pebench.analysis.reference import reference_url
from pebench.report.data import build_context


def _cpu_hours(url: str, point: str) -> float | None:
    """The stored training time of the models at ``point`` (sqlite only), in hours."""
    if not url.startswith("sqlite:///"):
        return None
    with sqlite3.connect(f"file:{Path(url[len('sqlite:///'):])}?mode=ro", uri=True) as db:
        cols = {r[1] for r in db.execute("pragma table_info(results)")}
        if "train_time_s" not in cols or "point" not in cols:
            return None
        (s,) = db.execute("select sum(train_time_s) from (select distinct encoding, task, seed, point, train_time_s "
                          "from results where point = ?)", (point,)).fetchone()  # fmt: skip
    return None if s is None else s / 3600


def main(argv: list[str]) -> int:
    url = argv[1] if len(argv) > 1 else reference_url(None)
    context = build_context(url, run="all")
    views = context["across_scale"]
    if not views:
        print(f"{url}: no run at another model size shares cells with the shown ranking")
        return 1
    for v in views:
        r = v.result
        print(f"## {v.point} ({v.protocol})\n\n{v.sentence}\n")
        if v.same_rate:
            print(f"{v.same_rate}\n")
        print(f"Leaders: default size {', '.join(r.base.groups[0]) if r.base.groups else '-'}; "
              f"{v.point} {', '.join(r.other.groups[0]) if r.other.groups else '-'}\n")  # fmt: skip
        print("| encoding | default size | " + v.point + " | moved |\n|---|---|---|---|")
        for enc, _colour, base, other, arrow in v.rows:
            print(f"| {enc} | {base} | {other} | {arrow} |")
        print("\n| task | tau-b [95%] |\n|---|---|")
        for task, text in v.per_task:
            print(f"| {task} | {text} |")
        hours = _cpu_hours(url, v.point)
        if hours is not None:
            print(f"\nStored training time at {v.point}: {hours:.1f} h")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
