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

import sys

from pebench.analysis.reference import reference_url
from pebench.report.data import build_context
from pebench.store import load as store_load
from pebench.store.database import open_db


def _cpu_hours(url: str, point: str) -> float:
    """The stored training time of the models at ``point``, in hours: each model once (its key,
    :data:`pebench.store.load.MODEL_KEY`), as the page's header counts all the training its rows took."""
    engine = open_db(url, create=False)
    try:
        df = store_load.load_light(engine)
    finally:
        engine.dispose()
    models = df[store_load.point_column(df) == point].drop_duplicates(list(store_load.MODEL_KEY))
    return float(models["train_time_s"].fillna(0).sum()) / 3600


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
        print(f"\nStored training time at {v.point}: {_cpu_hours(url, v.point):.1f} h")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
