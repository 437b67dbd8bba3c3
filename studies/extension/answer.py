"""The extension track's answer (issue 88), from the shipped reference after finish.sh merged it: each method at L,
F·L and 2F·L over the track's tasks with 95% intervals beside its zero-shot scores (the page's *Extension by
fine-tuning* table, :func:`pebench.report.extension.extension_view`), each method at F·L and 2F·L per task, and the
training time the track stored (each fine-tune, and each base model once).

    python studies/extension/answer.py [--db URL] > studies/extension/answer.md
"""

from __future__ import annotations

import argparse
from collections import defaultdict

from pebench.report.data import load
from pebench.report.extension import _method, _norm, _point, extension_view


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default="reference")
    args = parser.parse_args()
    from pebench.store.database import resolve_url

    d = load(resolve_url(args.db), "all")
    view = extension_view(d.extension, d.sel)
    assert view is not None, "no extension results in the database"
    print("| # | method | L | F·L | 2F·L | zero-shot L | zero-shot F·L | zero-shot 2F·L | tasks | seeds |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in view["rows"]:
        print(f"| {r['rank']} | {r['method']} | {' | '.join(r['scores'])} | {' | '.join(r['zero_shot'])} | "
              f"{r['n_tasks']} | {r['seeds']} |")  # fmt: skip
    per: dict[tuple[str, str], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    tasks = sorted(set(d.extension["task"]))
    for row in d.extension.to_dict("records"):
        found, value = _point(row), _norm(row)
        if found is None or value is None:
            continue
        label = _method(str(row["encoding"]), *found)[0]
        per[(label, row["task"])][int(row["eval_length"]) // int(row["train_length"])].append(value)
    print("\nPer task, the mean over seeds at F·L / 2F·L (F = 2):\n")
    print("| method | " + " | ".join(tasks) + " |")
    print("|---|" + "---|" * len(tasks))
    for label in [r["method"] for r in view["rows"]]:
        cells = []
        for t in tasks:
            m = per.get((label, t), {})
            cells.append("/".join(f"{sum(m[k]) / len(m[k]):.2f}" if m.get(k) else "–" for k in (2, 4)))
        print(f"| {label} | " + " | ".join(cells) + " |")
    trained = d.extension[d.extension["eval_length"] == d.extension["train_length"]]
    tune = float(trained["train_time_s"].fillna(0).sum())
    bases = {}
    for m in trained["metrics"]:
        base = (m or {}).get("base_model") if isinstance(m, dict) else None
        if isinstance(base, dict) and base.get("id"):
            bases[base["id"]] = float(base.get("train_time_s") or 0)
    print(f"\nStored training time: {tune / 3600:.1f} CPU-hours of fine-tunes and scaffold continuations "
          f"({len(trained)} models), {sum(bases.values()) / 3600:.1f} of the {len(bases)} base models they continued.")


if __name__ == "__main__":
    main()
