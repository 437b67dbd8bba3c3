"""``python studies/scale2/choose_tasks.py`` (issue 69): the tasks of the second model scale, per family the cheapest
of the tasks that separate the encodings most, none from a family whose tasks all score alike; and the choice it
prints for the shipped reference is the one ``studies/scale2/run.sh`` runs (its options.sh)."""

from __future__ import annotations

import re

import pandas as pd
from study_scripts import ROOT, load

choose_tasks = load("studies/scale2/choose_tasks.py")
N = len(choose_tasks.ENCODINGS)


def test_the_cheapest_of_the_most_separating_per_family_and_none_from_a_flat_family():
    t = pd.DataFrame({"spread": [0.40, 0.37, 0.20, 0.05, 0.09, 0.50],
                      "cpu_s": [900.0, 300.0, 100.0, 10.0, 5.0, 1.0],
                      "encodings": [N, N, N, N, N, N - 1],  # the last one lacks an encoding: never chosen
                      "family": ["a", "a", "a", "b", "b", "a"]},
                     index=["a_best", "a_close_cheap", "a_far_cheaper", "b1", "b2", "a_partial"])  # fmt: skip
    assert list(choose_tasks.choose(t, min_spread=0.1, within=0.05).index) == ["a_close_cheap"]
    assert list(choose_tasks.choose(t, min_spread=0.1, within=0.01).index) == ["a_best"]
    assert list(choose_tasks.choose(t, min_spread=0.08, within=0.05).index) == ["a_close_cheap", "b2"]


def test_the_printed_choice_is_what_the_run_trains():
    printed = (ROOT / "studies/scale2/choose_tasks.txt").read_text()
    chosen = re.search(r"chosen \(\d+ tasks\): (\S+)", printed)[1].split(",")  # type: ignore[index]
    script = (ROOT / "studies/scale2/options.sh").read_text()
    run = re.search(r"^TASKS=(\S+)$", script, re.M)[1].split(",")  # type: ignore[index]
    encodings = re.search(r"^ENC=(\S+)$", script, re.M)[1].split(",")  # type: ignore[index]
    assert sorted(chosen) == sorted(run)
    assert tuple(encodings) == choose_tasks.ENCODINGS
