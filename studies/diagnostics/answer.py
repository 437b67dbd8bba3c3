"""The diagnostics run's answer (issue 89), printed as markdown to stdout: per encoding, the normalised score and each
diagnostic at 1x and 4x (the means over the run's tasks, as the page's *Why* section computes them), the diagnostic
that moved most, and across the encodings the Spearman correlation of each diagnostic at 4x with the score at 4x
(the probe as its skill over the mean predictor, the logit range as |log2| of its ratio).

    python studies/diagnostics/answer.py > studies/diagnostics/answer.md
"""

from __future__ import annotations

import math
import sys

from scipy.stats import spearmanr

from pebench.analysis.mechanisms import moved, probe_skill
from pebench.analysis.page_data import diagnostics_run
from pebench.analysis.reference import reference_url
from pebench.report.why import COLUMNS, _means
from pebench.results import load


def main() -> int:
    df = load(reference_url("reference"), None)
    run = df[df["run_options"].map(diagnostics_run).astype(bool)]
    if run.empty:
        sys.exit("the shipped reference holds no diagnostics run: studies/diagnostics/finish.sh first")
    means = _means(run.to_dict("records"))
    order = sorted(means, key=lambda e: -means[e]["score"][4])
    names = [name for name, _, _ in COLUMNS if name != "score"]
    headers = {name: header for name, header, _ in COLUMNS}
    runs, seeds = sorted(int(r) for r in run["run_id"].unique()), sorted(int(r) for r in run["seed"].unique())
    print(f"Run {', '.join(map(str, runs))} of the shipped reference: {run['encoding'].nunique()} encodings, "
          f"{run['task'].nunique()} tasks, seeds {seeds}; means over the tasks, 1x -> 4x (logit range: its ratio at "
          "4x).\n")  # fmt: skip
    print("| encoding | score | " + " | ".join(headers[n] for n in names) + " | moved most |")
    print("|---" * (len(names) + 3) + "|")
    for enc in order:
        cells, moves = [], []
        for name in names:
            at = means[enc].get(name, {})
            if 1 not in at or 4 not in at:
                cells.append("–")
                continue
            a, b = (2 ** at[1], 2 ** at[4]) if name == "logit_range_ratio" else (at[1], at[4])
            cells.append(f"× {b:.2f}" if name == "logit_range_ratio" else f"{a:.2f} → {b:.2f}")
            moves.append((moved(name, a, b, 4), headers[name]))
        score = means[enc]["score"]
        print(f"| {enc} | {score[1]:.2f} → {score[4]:.2f} | " + " | ".join(cells) + f" | {max(moves)[1]} |")
    print("\nSpearman correlation across the encodings of each diagnostic at 4x with the score at 4x:\n")
    for name in names:
        pairs = [(means[e]["score"][4], means[e][name][4]) for e in order if 4 in means[e].get(name, {})]
        if name == "position_probe":
            pairs = [(s, probe_skill(v, 4)) for s, v in pairs]
        if name == "logit_range_ratio":
            pairs = [(s, abs(v)) for s, v in pairs]  # stored as log2 by the section's means
        rho, p = spearmanr([s for s, _ in pairs], [v for _, v in pairs])
        print(f"- {headers[name]}: {rho:+.2f} (p {p:.2f}, {len(pairs)} encodings)"
              + ("" if not math.isnan(rho) else " (constant)"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
