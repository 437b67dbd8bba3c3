"""``python studies/scale/models_per_hour.py``: one task's quick tier trained K = 1, K seeds one by one and K seeds
packed, in models per hour, and a projection of the full quick grid."""

from __future__ import annotations

import re

import pytest
from study_scripts import load

models_per_hour = load("studies/scale/models_per_hour.py")


@pytest.mark.slow
def test_models_per_hour_prints_the_three_ways_and_a_projection(capsys):
    code = models_per_hour.main(["--task", "reverse", "--k", "2", "--train-steps", "2"])
    out = capsys.readouterr().out
    assert code == 0
    from pebench import tasks

    n_lengths = len(tasks.build("reverse").eval_lengths("quick"))
    rates = {}
    for label in ("K=1", "K=2 one by one", "K=2 packed"):
        m = re.search(rf"^{re.escape(label)}\s+([\d.]+) s\s+(\d+) models/h\s+\((\d+)/(\d+) cases ok", out, re.M)
        assert m, out
        assert m.group(3) == m.group(4) == str(n_lengths * (1 if label == "K=1" else 2))  # every quick-tier length
        rates[label] = float(m.group(2))
    ratio = float(re.search(r"packed / one by one: ([\d.]+)x", out).group(1))
    assert ratio == pytest.approx(rates["K=2 packed"] / rates["K=2 one by one"], abs=0.02)
    assert re.search(r"projected quick grid \(\d+ encodings x \d+ tasks x 2 seeds, (packed|one by one)\)", out)


def test_an_unknown_task_is_one_line(capsys):
    assert models_per_hour.main(["--task", "nonesuch"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "valid tasks:" in err
