"""Findings on the extension's points and on the mechanism diagnostics (issues 88 and 89): a term reads the results
of its point (``ext2x``) and a diagnostic from a result's metrics; hand-made results with known answers."""

from __future__ import annotations

import pandas as pd
import pytest

from pebench.analysis.findings import FAILS, HOLDS, NOT_RUN, evaluate
from pebench.analysis.findings.protocols import LOCALITY, PI, POSE, TRACK


def row(enc, task, length, score, *, point="", seed=0, metrics=None, train=64):  # type: ignore[no-untyped-def]
    axes = [[point[:-2], point[-2:]]] if point.startswith("ext") else [[point[:4], point[4:]]] if point else []
    return {"encoding": enc, "task": task, "train_length": train, "eval_length": length, "seed": seed, "status": "ok",
            "score": score, "metric": "accuracy", "higher_is_better": True, "chance_level": 0.0,
            "config": {"model": {"vocab_size": 50}}, "axes": axes, "point": point, "metrics": metrics or {}}


def frame(rows: list[dict]) -> pd.DataFrame:  # type: ignore[type-arg]
    df = pd.DataFrame(rows)
    df["id"] = range(1, len(df) + 1)
    return df


def track(enc: str, score: float, point: str = "ext2x") -> list[dict]:  # type: ignore[type-arg]
    return [row(enc, task, 128, score, point=point) for task in TRACK]


def test_an_extension_claim_reads_its_point_and_not_the_from_scratch_results():
    # from scratch, RoPE beats PI at 2x; after the fine-tune (ext2x), PI beats RoPE: the claim reads the latter
    scratch = track("pi", 0.1, point="") + track("rope", 0.9, point="")
    res = evaluate(PI, frame(scratch + track("pi", 0.8) + track("rope", 0.6)))
    assert res.verdict == HOLDS
    left, right = res.checks[0].left.per_seed, res.checks[0].right.per_seed
    assert left == {0: pytest.approx(0.8)} and right == {0: pytest.approx(0.6)}
    assert evaluate(PI, frame(scratch + track("pi", 0.5) + track("rope", 0.6))).verdict == FAILS
    missing = evaluate(PI, frame(scratch + track("rope", 0.6)))
    assert missing.verdict == NOT_RUN and ("pi-k_back-L128-ext2x", "not in the run") in missing.missing


def test_poses_claim_compares_its_two_points_within_005():
    rows = track("rope", 0.70, "pose2x") + track("rope", 0.74) + track("yarn", 0.80, "pose2x") + track("yarn", 0.9)
    res = evaluate(POSE, frame(rows))
    assert res.verdict == FAILS and [c.holds for c in res.checks] == [True, False]  # yarn: 0.10 apart


def test_a_mechanism_claim_reads_the_diagnostic_from_the_results_metrics():
    def at4(enc, local):  # type: ignore[no-untyped-def]
        return row(enc, "k_back", 256, 0.5, metrics={"local_mass": local})

    assert evaluate(LOCALITY, frame([at4("alibi", 0.95), at4("rope", 0.40)])).verdict == HOLDS
    assert evaluate(LOCALITY, frame([at4("alibi", 0.85), at4("rope", 0.40)])).verdict == FAILS
    res = evaluate(LOCALITY, frame([row("alibi", "k_back", 256, 0.5), at4("rope", 0.4)]))  # run --no-diagnostics
    assert res.verdict == NOT_RUN and res.missing == [("alibi-k_back-L256", "no diagnostics")]


def test_findings_on_a_database_with_both_protocols_runs(run_suite, pebench_cli, tmp_path):
    db = f"sqlite:///{tmp_path / 'r.db'}"
    tiny = ("--task", "k_back", "--steps", "5", "--d-model", "16", "--layers", "1", "--heads", "2", "--batch-size",
            "8", "--eval-samples", "8", "--db", db)  # fmt: skip
    # the from-scratch run at the learning-rate protocol (as the reference's), the extension at one rate (as its track)
    assert run_suite("--encoding", "rope,alibi", *tiny, lr_protocol=True).returncode == 0
    assert run_suite("--encoding", "rope,pi", "--extend", "2", "--lr-sweep", "off", *tiny).returncode == 0
    res = pebench_cli("findings", "--db", db, "--run", "all")
    assert res.returncode in (0, 1), res.stderr
    assert "chi2023-alibi-locality: " in res.stdout and "sweep points" not in res.stderr
    assert "not in the run: task copy" in res.stdout  # the extension claims: k_back only of the track's tasks


def test_a_mechanism_claim_reads_a_diagnostics_run_where_the_ranked_results_store_none():
    from pebench.analysis.findings import evaluate_all

    ranked = frame([row("alibi", "k_back", 256, 0.9), row("rope", "k_back", 256, 0.2)])  # --no-diagnostics
    measured = frame([row("alibi", "k_back", 256, 0.8, metrics={"local_mass": 0.95}),
                      row("rope", "k_back", 256, 0.3, metrics={"local_mass": 0.4})])  # fmt: skip
    measured["id"] += 10
    res = next(r for r in evaluate_all(ranked, measured) if r.name == LOCALITY.name)
    assert res.verdict == HOLDS and res.checks[0].left.per_seed == {0: pytest.approx(0.95)}
    # where the ranked results store the diagnostic, theirs is read, not the diagnostics run's
    own = frame([row("alibi", "k_back", 256, 0.9, metrics={"local_mass": 0.5}), row("rope", "k_back", 256, 0.2)])
    res = next(r for r in evaluate_all(own, measured) if r.name == LOCALITY.name)
    assert res.verdict == FAILS and res.checks[0].left.per_seed == {0: pytest.approx(0.5)}
    assert next(r for r in evaluate_all(ranked) if r.name == LOCALITY.name).verdict == NOT_RUN
