"""Findings on hand-made results: claims that hold, do not hold and are not run (naming the missing cases), diverged
and errored cases, several seeds with intervals and the within-noise flag, lengths as multiples of the training
length; and the registry of published claims (each one's thresholds, and cases the suite can run)."""

from pathlib import Path

import pandas as pd
import pytest

from pebench.analysis import findings as F
from pebench.analysis.findings import FAILS, HOLDS, NOT_RUN, evaluate
from pebench.analysis.findings.claims import DIAGNOSTICS
from pebench.analysis.findings.published import FINDINGS, NOT_LEARNED, PPL_SAME
from pebench.analysis.scoring import learned_verdict
from pebench.analysis.stats import estimate
from pebench.metrics import Tolerances

K_BACK_CHANCE = 0.02


def row(enc, task, length, score, *, seed=0, train=64, metric="accuracy", status="ok", chance=K_BACK_CHANCE,
        vocab=50, rid=None):  # fmt: skip
    return {"id": rid, "encoding": enc, "task": task, "train_length": train, "eval_length": length, "seed": seed,
            "status": status, "score": score if status == "ok" else None, "metric": metric,
            "higher_is_better": metric != "perplexity", "chance_level": chance,
            "config": {"model": {"vocab_size": vocab}}}  # fmt: skip


def frame(*rows):
    df = pd.DataFrame(list(rows))
    df["id"] = range(1, len(df) + 1)
    return df


SEED_002 = FINDINGS.get("seed002-k_back")


# -- the vocabulary ---------------------------------------------------------------------------------------------------
def test_claims_read_as_written():
    check = F.accuracy("rope", "k_back", 2) >= 0.95
    assert check.text() == "accuracy(rope, k_back @ 2×) ≥ 0.95"
    assert check.text(unicode=False) == "accuracy(rope, k_back @ 2x) >= 0.95"
    scaled = F.perplexity("alibi", "lm", 4) <= 1.05 * F.perplexity("alibi", "lm", 1)
    assert scaled.text() == "perplexity(alibi, lm @ 4×) ≤ 1.05 × perplexity(alibi, lm @ 1×)"
    near = F.approx(F.perplexity("alibi", "lm", 1), F.perplexity("rope", "lm", 1), within=0.05, relative=True)
    assert near.text() == "perplexity(alibi, lm @ 1×) ≈ perplexity(rope, lm @ 1×) (within 5% relative)"
    mean = F.normalised("nope", ("a", "b"), 2, 4, group="both") < 0.1
    assert mean.text() == "mean normalised(nope, both @ 2×,4×) < 0.1"
    reflected = 0.5 <= F.accuracy("rope", "t", 1)  # noqa: SIM300  (a number on the left: the reflected comparison)
    assert reflected.op == ">=" and reflected.right == 0.5


@pytest.mark.parametrize(
    "make",
    [
        lambda: F.accuracy("rope", "k_back", 2) >= F.perplexity("rope", "lm", 2),  # different metrics
        lambda: F.Check(F.accuracy("rope", "k_back", 2), "!=", 0.5),  # unknown operator
        lambda: F.Check(F.accuracy("rope", "k_back", 2), "~=", 0.5),  # ~= without a tolerance
        lambda: F.accuracy("rope", "k_back", 0),  # a length multiple must be positive
        lambda: -1 * F.accuracy("rope", "k_back", 1),  # factors are positive
        lambda: F.Term("bleu", "rope", ("k_back",), (1.0,)),  # unknown metric
    ],
)
def test_malformed_claims_are_refused(make):
    with pytest.raises(ValueError):
        make()


def test_approx_absolute_and_relative():
    rel = F.approx(F.perplexity("a", "lm", 1), F.perplexity("b", "lm", 1), within=0.05, relative=True)
    assert rel.holds(4.0, 4.2) and rel.holds(4.2, 4.0)  # 4.2 / 4.0 = 1.05
    assert not rel.holds(4.0, 4.3)
    absolute = F.approx(F.accuracy("a", "t", 1), F.accuracy("b", "t", 1), within=0.1)
    assert absolute.holds(0.5, 0.6) and not absolute.holds(0.5, 0.65)


# -- one seed: holds, does not hold, not run ------------------------------------------------------------------------
def test_seed_002_holds_with_the_numbers_used():
    res = evaluate(SEED_002, frame(row("rope", "k_back", 128, 0.97), row("learned", "k_back", 128, 0.40),
                                   row("rope", "k_back", 64, 0.10)))  # fmt: skip
    assert res.verdict == HOLDS and not res.within_noise and res.seeds == [0]
    rope, learned = res.checks
    assert rope.holds and rope.left.estimate.mean == pytest.approx(0.97) and rope.right == 0.95
    assert learned.holds and learned.left.estimate.mean == pytest.approx(0.40)
    assert rope.left.estimate.n == 1 and rope.left.estimate.low == rope.left.estimate.high  # no interval


def test_seed_002_does_not_hold_when_rope_falls_below_095():
    res = evaluate(SEED_002, frame(row("rope", "k_back", 128, 0.90), row("learned", "k_back", 128, 0.40)))
    assert res.verdict == FAILS
    assert [c.holds for c in res.checks] == [False, True]


def test_not_run_names_the_missing_cases_and_the_command():
    res = evaluate(SEED_002, frame(row("rope", "k_back", 128, 0.97), row("learned", "k_back", 64, 0.99)))
    assert res.verdict == NOT_RUN
    assert res.missing == [("learned-k_back-L128", "not in the run")]  # L64 ran, but the claim is at 2x = 128
    assert res.command == "pebench run --encoding rope,learned --task k_back"
    assert res.checks[0].holds is True and res.checks[1].holds is None  # what could be checked still is
    empty = evaluate(SEED_002, frame(row("rope", "copy", 24, 0.5, train=12, metric="exact_match")))
    assert empty.verdict == NOT_RUN and empty.missing == [("task k_back", "not in the run")]


def test_diverged_counts_as_chance_and_errored_as_not_run():
    diverged = frame(row("rope", "k_back", 128, 0.97), row("learned", "k_back", 128, None, status="diverged"))
    res = evaluate(SEED_002, diverged)
    assert res.verdict == HOLDS  # learned's accuracy is the chance level, 0.02 <= 0.65
    assert res.checks[1].left.estimate.mean == pytest.approx(K_BACK_CHANCE)
    errored = frame(row("rope", "k_back", 128, None, status="error"), row("learned", "k_back", 128, 0.4))
    res = evaluate(SEED_002, errored)
    assert res.verdict == NOT_RUN and res.missing == [("rope-k_back-L128", "error")]


def test_a_diverged_perplexity_is_the_uniform_predictors():
    press = FINDINGS.get("press2022-alibi-lm")
    lm = dict(metric="perplexity", chance=256.0, vocab=260)
    df = frame(row("alibi", "lm", 64, 5.0, **lm), row("alibi", "lm", 256, 5.1, **lm),
               row("sinusoidal", "lm", 64, 6.0, **lm), row("sinusoidal", "lm", 256, None, status="diverged", **lm))
    res = evaluate(press, df)
    # 5.1 <= 1.05 * 5.0; sinusoidal at 4x counts as 256 >= 2 * 6.0; 5.1 < 256
    assert res.verdict == HOLDS
    assert res.checks[1].left.estimate.mean == pytest.approx(256.0)
    assert res.checks[0].right.scaled().mean == pytest.approx(5.25)


def test_a_task_scored_by_another_metric_is_not_used():
    df = frame(row("rope", "k_back", 128, 0.97, metric="exact_match"), row("learned", "k_back", 128, 0.4))
    res = evaluate(SEED_002, df)
    assert res.verdict == NOT_RUN and res.missing == [("rope-k_back-L128", "scored by exact_match, not accuracy")]


def test_a_later_result_of_the_same_case_replaces_an_earlier_one():
    df = frame(row("rope", "k_back", 128, 0.5), row("learned", "k_back", 128, 0.4), row("rope", "k_back", 128, 0.99))
    assert evaluate(SEED_002, df).verdict == HOLDS


# -- lengths are multiples of the run's training length ---------------------------------------------------------------
def test_multiples_follow_the_training_length_of_the_run():
    parity = FINDINGS.get("deletang2023-parity")
    # parity trained on 1..8 (task option train_max=8): 2x and 4x are 16 and 32; accuracy 0.52 -> normalised 0.04
    rows = [row(e, "parity", L, 0.52, train=8, chance=0.5) for e in ("nope", "sinusoidal", "rope", "alibi")
            for L in (8, 16, 32)]  # fmt: skip
    res = evaluate(parity, frame(*rows))
    assert res.verdict == HOLDS
    assert all(c.left.estimate.mean == pytest.approx(0.04) for c in res.checks)
    # rope learns parity out of distribution (0.80 and 0.70 -> normalised 0.6 and 0.4, mean 0.5 >= 0.1)
    rows = [r for r in rows if r["encoding"] != "rope"] + [
        row("rope", "parity", 16, 0.80, train=8, chance=0.5), row("rope", "parity", 32, 0.70, train=8, chance=0.5)]
    res = evaluate(parity, frame(*rows))
    assert res.verdict == FAILS
    assert [c.holds for c in res.checks] == [True, True, False, True]
    assert res.checks[2].left.estimate.mean == pytest.approx(0.5)


def test_a_term_over_several_tasks_is_their_mean():
    ruoss = FINDINGS.get("ruoss2023-randomized")
    tasks = ("parity", "cycle_navigation", "modular_arithmetic", "duplicate_string", "binary_addition", "bucket_sort")
    rows = []
    for i, task in enumerate(tasks):
        for L in (80, 160):
            rows += [row("rope", task, L, 0.50, train=40), row("randomized_rope", task, L, 0.50 + 0.01 * i, train=40),
                     row("learned", task, L, 0.30, train=40), row("randomized_learned", task, L, 0.30, train=40)]
    res = evaluate(ruoss, frame(*rows))
    rr, rl = res.checks
    assert rr.left.estimate.mean == pytest.approx(0.50 + 0.01 * sum(range(6)) / 6) and rr.holds
    assert rl.holds is False  # a tie is not "beats"
    assert res.verdict == FAILS
    partial = evaluate(ruoss, frame(*[r for r in rows if r["task"] != "bucket_sort"]))
    assert partial.verdict == NOT_RUN and partial.missing == [("task bucket_sort", "not in the run")]


# -- several seeds -----------------------------------------------------------------------------------------------------
def test_several_seeds_give_means_intervals_and_the_verdict_on_the_means():
    rope = [0.96, 0.97, 0.98]
    learned = [0.30, 0.40, 0.50]
    df = frame(*[row("rope", "k_back", 128, v, seed=s) for s, v in enumerate(rope)],
               *[row("learned", "k_back", 128, v, seed=s) for s, v in enumerate(learned)])  # fmt: skip
    res = evaluate(SEED_002, df)
    assert res.verdict == HOLDS and res.seeds == [0, 1, 2] and not res.within_noise
    left = res.checks[0].left
    assert left.per_seed == pytest.approx({0: 0.96, 1: 0.97, 2: 0.98})
    expected = estimate(rope)  # the BCa bootstrap interval over the seeds (pebench.analysis.stats)
    assert (left.estimate.mean, left.estimate.low, left.estimate.high) == pytest.approx(
        (0.97, expected.low, expected.high))
    assert left.estimate.low < 0.97 < left.estimate.high and left.estimate.low > 0.95


def test_a_verdict_the_intervals_could_reverse_is_within_noise():
    # rope's mean 0.9533 clears 0.95, but its seeds range 0.90-1.00: the interval straddles the threshold
    df = frame(*[row("rope", "k_back", 128, v, seed=s) for s, v in enumerate((0.90, 0.96, 1.00))],
               *[row("learned", "k_back", 128, 0.40, seed=s) for s in range(3)])  # fmt: skip
    res = evaluate(SEED_002, df)
    assert res.verdict == HOLDS and res.within_noise
    assert res.checks[0].within_noise and not res.checks[1].within_noise
    # the same spread around 0.90: does not hold, within noise
    df = frame(*[row("rope", "k_back", 128, v, seed=s) for s, v in enumerate((0.85, 0.90, 0.96))],
               *[row("learned", "k_back", 128, 0.40, seed=s) for s in range(3)])  # fmt: skip
    res = evaluate(SEED_002, df)
    assert res.verdict == FAILS and res.within_noise
    # one failing check the intervals cannot save makes the failure certain, whatever the other checks
    df = frame(*[row("rope", "k_back", 128, v, seed=s) for s, v in enumerate((0.85, 0.90, 0.96))],
               *[row("learned", "k_back", 128, v, seed=s) for s, v in enumerate((0.80, 0.81, 0.82))])  # fmt: skip
    res = evaluate(SEED_002, df)
    assert res.verdict == FAILS and not res.within_noise


def test_only_seeds_with_every_case_of_a_term_count():
    parity = FINDINGS.get("deletang2023-parity")
    rows = [row(e, "parity", L, 0.5, train=40, chance=0.5, seed=s) for e in ("nope", "sinusoidal", "rope", "alibi")
            for L in (80, 160) for s in (0, 1)]  # fmt: skip
    rows = [r for r in rows if not (r["encoding"] == "rope" and r["eval_length"] == 160 and r["seed"] == 1)]
    res = evaluate(parity, frame(*rows))
    assert res.checks[2].left.per_seed == {0: 0.0}  # seed 1 lacks rope at 160
    assert res.checks[0].left.per_seed == {0: 0.0, 1: 0.0}


# -- the registry of published claims ----------------------------------------------------------------------------------
def test_the_registry_holds_the_published_claims_in_order():
    assert [f.name for f in FINDINGS.items()] == [
        "seed002-k_back", "seed000-lm-order", "press2022-alibi-lm", "kazemnejad2023-copy", "kazemnejad2023-reverse",
        "ruoss2023-randomized", "deletang2023-parity", "chen2023-pi-finetune", "peng2023-yarn-finetune",
        "lu2024-ntk-inside", "lu2024-degrade-beyond", "zhu2023-pose", "seed003-scaffold", "nakanishi2025-dilution",
        "chi2023-alibi-locality", "kazemnejad2023-position-probe", "chen2023-rope-score-range",
        "xiao2023-attention-sinks"]  # fmt: skip
    for f in FINDINGS.items():
        assert f.title and f.paper and len(f.claim) > 100, f.name
    assert [c.text() for c in SEED_002.checks] == [
        "accuracy(rope, k_back @ 2×) ≥ 0.95", "accuracy(learned, k_back @ 2×) ≤ 0.65"]
    assert FINDINGS.describe()[0][0] == "chen2023-pi-finetune"  # the Registry type's listing, sorted


def test_the_claims_tolerances_are_pebenchs_own_definitions():
    assert Tolerances().perplexity == PPL_SAME
    assert learned_verdict(NOT_LEARNED - 1e-9) == "not learned" and learned_verdict(NOT_LEARNED) == "partly"


def test_every_case_a_claim_needs_is_a_case_its_command_runs():
    from pebench import encodings, tasks

    for f in FINDINGS.items():
        for enc, task, m in f.cases():
            encodings.get(enc)  # a registered name (an unknown one raises)
            t = tasks.build(task)
            tier = "full" if "--tier full" in f.command() else "quick"
            assert m * t.train_length in t.eval_lengths(tier), (f.name, task, m)
        assert f.command().startswith(f"pebench run --encoding {','.join(f.encodings())} --task ")


def test_each_term_uses_its_tasks_own_metric():
    from pebench import tasks

    for f in FINDINGS.items():
        for term in f.terms():
            for task in term.tasks:
                assert term.metric in ("normalised", tasks.get(task).metric, *DIAGNOSTICS), (f.name, task)


def test_every_check_is_listed_in_the_docs():
    docs = (Path(__file__).resolve().parents[2] / "docs" / "findings.md").read_text(encoding="utf-8")
    for f in FINDINGS.items():
        assert f"### {f.name}" in docs or f", {f.name} " in docs, f.name
        for c in f.checks:
            assert f"`{c.text()}`" in docs, c.text()



def test_a_default_protocol_run_is_checked_with_each_cell_at_its_own_chosen_rate(lr_run):
    """The default protocol trains each cell at two rates and reports the one of the better validation; when cells
    choose different rates (rope 1e-3, learned 3e-3) the run holds both rates as sweep points, which are not points
    to rank one at a time: each cell is checked at its own chosen rate, and ``--point`` still picks one rate."""
    from pebench.analysis.findings.output import run_findings

    (res,) = [r for r in run_findings(lr_run, 1).results if r.finding is SEED_002]
    rope, learned = res.checks
    assert rope.left.estimate.mean == pytest.approx(0.97) and learned.left.estimate.mean == pytest.approx(0.40)
    assert res.verdict == HOLDS
    (at_3e3,) = [r for r in run_findings(lr_run, 1, point="lr0.003").results if r.finding is SEED_002]
    assert at_3e3.checks[0].left.estimate.mean == pytest.approx(0.20) and at_3e3.verdict == FAILS
