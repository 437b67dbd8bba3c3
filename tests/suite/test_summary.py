"""The suite's terminal summary: per-task score tables (ID | OOD, chance, best marked only beyond the noise) from
hand-made records, and on a small run: scores on each ``-v`` line, the report command, pytest-benchmark's table only
when asked."""

from pebench.analysis import noise
from pebench.analysis.noise import protocol_hash
from pebench.records.record import ResultRecord
from pebench.suite.summary import case_score, score_tables


def rec(enc, length, score, seed=0, status="ok", task="k_back", metric="accuracy", hib=True, chance=0.02):
    return ResultRecord(case_id=f"{enc}-{task}-L{length}", encoding=enc, encoding_version="1", task=task,
                        task_version="1", train_length=64, eval_length=length, seed=seed, config={}, config_hash="h",
                        status=status, metric=metric, higher_is_better=hib, chance_level=chance,
                        score=score if status == "ok" else None)  # fmt: skip


def test_tables_from_hand_made_scores(monkeypatch):
    three = lambda enc, length, scores, **kw: [rec(enc, length, v, seed=i, **kw) for i, v in enumerate(scores)]  # noqa: E731
    records = [
        *three("rope", 64, [1.0] * 3), *three("alibi", 64, [0.99996] * 3),  # both show 100.0: a tie
        *three("rope", 128, [0.60, 0.62, 0.61]), *three("alibi", 128, [0.30, 0.31, 0.32]),  # intervals separate
        rec("alibi", 256, None, status="diverged"), rec("rope", 256, 0.25),  # one seed each
        rec("rope", 64, 0.302, task="copy"), rec("alibi", 64, 0.304, task="copy"),  # one seed, 0.2 points apart
        rec("rope", 64, 4.0, task="lm", metric="perplexity", hib=False, chance=256.0),
        rec("alibi", 64, 5.0, task="lm", metric="perplexity", hib=False, chance=256.0),
    ]  # fmt: skip
    lines = score_tables(records)
    assert lines[0] == "copy (train length 64): accuracy %, higher is better, chance 2%"
    assert lines[2].split() == ["alibi", "30.4", "|", "–"] and lines[3].split() == ["rope", "30.2", "|", "–"]
    assert lines[4] == "k_back (train length 64): accuracy %, higher is better, chance 2%"
    assert lines[5].split() == ["encoding", "64", "|", "128", "256", "how", "far"]
    # 64: a tie at the shown precision; 128: rope's seeds beat alibi's beyond their intervals; 256: one seed and no
    # measured spread for this configuration, so rope's 25% against a diverged alibi is not marked
    assert lines[6].split() == ["alibi", "100.0", "|", "31.0", "diverged", "1×"]
    assert lines[7].split() == ["rope", "100.0", "|", "61.0*", "25.0", "1×"]
    assert lines[8] == "lm (train length 64): perplexity, lower is better, chance 256"
    assert lines[10].split() == ["alibi", "5.00", "|", "1×"] and lines[11].split() == ["rope", "4.00", "|", "1×"]
    assert case_score(records[0]) == "accuracy 100.0%" and case_score(records[-1]) == "perplexity 5.00"
    assert case_score(records[12]) == "diverged"

    # with a measured seed spread (sigma 0.02 of the normalised score: a single-seed pair must differ by more than
    # 1.96 * sqrt(2) * 0.02 = 0.055): rope's 25% beats a diverged run (normalised 0.23 vs 0), copy's 0.2 points do not
    spread = {"tasks": {t: {"sigma": 0.02, "protocol": protocol_hash({})} for t in ("k_back", "copy")}}
    monkeypatch.setattr(noise, "spread_data", lambda path=None: spread)
    lines = score_tables(records)
    assert lines[3].split() == ["rope", "30.2", "|", "–"] and lines[2].split() == ["alibi", "30.4", "|", "–"]
    assert lines[7].split() == ["rope", "100.0", "|", "61.0*", "25.0*", "1×"]


def test_how_far_column():
    """How far (pebench.analysis.reach): the longest length keeping 90% of the normalised score at the training
    length, contiguous, as a multiple of it; "–" when not learned (here: at chance)."""
    records = [
        *(rec("rope", L, v, seed=s) for L, v in ((64, 1.0), (128, 0.97), (256, 0.92), (512, 0.3)) for s in (0, 1)),
        *(rec("nope", L, v) for L, v in ((64, 0.02), (128, 0.02), (256, 0.02), (512, 0.02))),
        rec("alibi", 64, 0.9), rec("alibi", 128, 0.6), rec("alibi", 256, 0.9), rec("alibi", 512, None, status="error"),
        rec("alibi", 64, 4.0, task="lm", metric="perplexity", hib=False, chance=256.0),
        rec("alibi", 128, 4.2, task="lm", metric="perplexity", hib=False, chance=256.0),
    ]  # fmt: skip
    lines = score_tables(records)
    assert lines[1].endswith("  how far") and lines[1].split()[-2:] == ["how", "far"]
    assert lines[2].split()[-1] == "1×"  # alibi: 0.6 at 2x fails, the recovery at 4x does not count
    assert lines[3].split()[-1] == "–"  # nope: at chance in distribution, not learned
    assert lines[4].split()[-1] == "4×"  # rope: 0.92 at 4x is 0.918 normalised to chance, 0.3 at 8x is not
    assert lines[-1].split() == ["alibi", "4.00", "|", "4.20", "2×"]  # lower is better, through the normalisation


def test_summary_of_a_small_run(run_suite, tiny, tmp_path):
    url = f"sqlite:///{tmp_path / 's.db'}"
    args = ["--encoding", "rope,alibi", "--task", "k_back", "--steps", "3", "--db", url, "--no-cache", *tiny]
    res = run_suite("-vv", *args, inprocess=True)  # run_suite passes -q: -vv makes it -v
    assert res.returncode == 0, res.output
    assert "test_case[rope-k_back-L64] PASSED (accuracy " in res.stdout
    assert "pebench: scores of run 1" in res.stdout
    assert "k_back (train length 64): accuracy %, higher is better, chance 2%" in res.stdout
    assert f"leaderboard: pebench report --db '{url}' --run 1 -o leaderboard.html" in res.stdout
    assert "benchmark 'training'" not in res.stdout  # pytest-benchmark's table of single rounds is not shown...
    res = run_suite(*args, "--timing-table", inprocess=True)
    assert "benchmark 'training'" in res.stdout  # ...unless asked for
