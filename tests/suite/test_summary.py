"""The suite's terminal summary: per-task score tables (ID | OOD, chance, best marked unless tied) from hand-made
records, and on a small run: scores on each ``-v`` line, the report command, pytest-benchmark's table only when
asked."""

from pebench.store.record import ResultRecord
from pebench.suite.summary import case_score, score_tables


def rec(enc, length, score, seed=0, status="ok", task="k_back", metric="accuracy", hib=True, chance=0.02):
    return ResultRecord(case_id=f"{enc}-{task}-L{length}", encoding=enc, encoding_version="1", task=task,
                        task_version="1", train_length=64, eval_length=length, seed=seed, config={}, config_hash="h",
                        status=status, metric=metric, higher_is_better=hib, chance_level=chance,
                        score=score if status == "ok" else None)  # fmt: skip


def test_tables_from_hand_made_scores():
    records = [
        rec("rope", 64, 1.0), rec("rope", 128, 0.5, seed=0), rec("rope", 128, 0.7, seed=1),  # mean 60.0
        rec("alibi", 64, 0.99996), rec("alibi", 128, 0.3), rec("alibi", 256, None, status="diverged"),
        rec("rope", 256, 0.25),
        rec("rope", 64, 4.0, task="lm", metric="perplexity", hib=False, chance=256.0),
        rec("alibi", 64, 5.0, task="lm", metric="perplexity", hib=False, chance=256.0),
    ]  # fmt: skip
    lines = score_tables(records)
    assert lines[0] == "k_back (train length 64): accuracy %, higher is better, chance 2%"
    assert lines[1].split() == ["encoding", "64", "|", "128", "256"]
    # 99.996 and 100.0 both show as 100.0: a tie, so no mark at 64; rope is best alone at 128 and 256
    assert lines[2].split() == ["alibi", "100.0", "|", "30.0", "diverged"]
    assert lines[3].split() == ["rope", "100.0", "|", "60.0*", "25.0*"]
    assert lines[4] == "lm (train length 64): perplexity, lower is better, chance 256"
    assert lines[6].split() == ["alibi", "5.00", "|"] and lines[7].split() == ["rope", "4.00*", "|"]
    assert case_score(records[0]) == "accuracy 100.0%" and case_score(records[7]) == "perplexity 4.00"
    assert case_score(records[5]) == "diverged"


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
