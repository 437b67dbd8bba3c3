"""The mechanism diagnostics on every evaluated result (issue 89, item 1): stored in its metrics under their names,
never changing a score, off with ``--no-diagnostics``."""

from __future__ import annotations

import math

import pebench.results as results
from pebench.engine.diagnostics import DIAGNOSTICS

TINY_RUN = ("--task", "k_back", "--steps", "10", "--d-model", "32", "--layers", "1", "--eval-samples", "8",
            "--batch-size", "8", "--lr-sweep", "off", "--no-cache")  # fmt: skip
"""The issue's tiny run (with ``--encoding rope,alibi,nope``)."""


def test_every_result_stores_the_diagnostics_and_they_change_no_score(run_suite, tmp_path):
    on, off = f"sqlite:///{tmp_path / 'on.db'}", f"sqlite:///{tmp_path / 'off.db'}"
    page, bare = tmp_path / "w.html", tmp_path / "bare.html"
    assert run_suite("--encoding", "rope,alibi,nope", *TINY_RUN, "--db", on, "--report", str(page)).returncode == 0
    assert run_suite("--encoding", "rope,alibi,nope", *TINY_RUN, "--db", off, "--no-diagnostics", "--report",
                     str(bare)).returncode == 0  # fmt: skip
    html = page.read_text()
    assert 'id="why"' in html and 'href="#why"' in html and 'id="why"' not in bare.read_text()
    section = html[html.index('id="why-table"'):html.index("</section>", html.index('id="why-table"'))]
    assert [e for e in ("alibi", "nope", "rope") if f'data-filter="{e}"' in section] == ["alibi", "nope", "rope"]
    assert "<title>alibi, local mass at 1x, 2x, 4x: 1.00, " in section  # one sparkline per diagnostic
    with_, without = results.load(on).sort_values("case_id"), results.load(off).sort_values("case_id")
    assert len(with_) == 9
    for metrics, length in zip(with_["metrics"], with_["eval_length"], strict=True):
        assert set(DIAGNOSTICS) <= set(metrics), metrics.keys()
        assert all(isinstance(metrics[n], float) and math.isfinite(metrics[n]) for n in DIAGNOSTICS)
        assert 0 <= metrics["attn_entropy"] <= 1 and 0 <= metrics["sink_mass"] <= 1
        assert metrics["local_mass"] == 1.0 if length == 64 else 0 < metrics["local_mass"] <= 1
        assert metrics["logit_range_ratio"] == 1.0 if length == 64 else metrics["logit_range_ratio"] > 0
        assert len(metrics["diagnostics_by_layer"]["attn_entropy"]) == 1  # one layer
    assert not any(n in m for m in without["metrics"] for n in DIAGNOSTICS)
    # the same scores, loss and accuracies bit for bit with and without them
    for column in ("score", "loss", "token_accuracy", "sequence_accuracy"):
        assert list(with_[column]) == list(without[column]), column
    alibi = with_[with_["encoding"] == "alibi"].set_index("eval_length")["metrics"]
    # ALiBi's bias grows with the distance: its logit range at 4x is about 4 times the training length's
    assert 3 < alibi[256]["logit_range_ratio"] < 5


def test_the_terminal_says_per_encoding_which_diagnostic_moved_most(run_suite, tmp_path):
    res = run_suite("--encoding", "alibi", *TINY_RUN, "--db", f"sqlite:///{tmp_path / 'r.db'}")
    assert res.returncode == 0, res.output
    lines = res.output.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("why (k_back)"))
    assert "from the training length 64 to 256" in lines[head]
    # ALiBi's logit range grows with the distance: about 4x at 4x the training length, the largest move
    assert lines[head + 1].split()[:2] == ["alibi", "logits"] and lines[head + 1].split()[2].endswith("*")
    off = run_suite("--encoding", "alibi", *TINY_RUN, "--db", f"sqlite:///{tmp_path / 'o.db'}", "--no-diagnostics")
    assert "why (" not in off.output
