"""The HTML leaderboard: scores and aggregates from hand-computed numbers, escaping, empty databases, bad input, the
size of a 10,000-result page, the attention snapshot the runner stores, and ``pytest suite --report``."""

import math
import re
import time

import pytest

from pebench import store as db
from pebench.cli import main as cli_main
from pebench.errors import DatabaseError
from pebench.records import attention
from pebench.report import ReportError, build_context, render_report

EVIL = "<script>alert(1)</script>"

RUN = {"package_version": "0", "torch_version": "t", "python_version": "3", "device": "cpu:test", "host": "h",
       "git_commit": "abcdef0123456789", "git_dirty": True, "tier": "quick"}  # fmt: skip


def record(enc, task, length, seed, score, *, chance=0.5, hib=True, status="ok", message="", train=64, vocab=16):
    return {
        "case_id": f"{enc}-{task}-L{length}",
        "encoding": enc,
        "encoding_version": "1",
        "task": task,
        "task_version": "1",
        "train_length": train,
        "eval_length": length,
        "seed": seed,
        "config": {"model": {"vocab_size": vocab, "d_model": 16, "n_layers": 1, "n_heads": 2}, "train": {"steps": 5}},
        "config_hash": f"h-{enc}-{task}",
        "status": status,
        "message": message,
        "metric": "accuracy" if hib else "perplexity",
        "higher_is_better": hib,
        "chance_level": chance,
        "score": score if status == "ok" else None,
        "train_time_s": 1.0,
        "model_reused": length != train,
        "metrics": {},
        "curve": [{"step": 1, "loss": 2.0, "accuracy": 0.1}, {"step": 5, "loss": 1.0, "accuracy": 0.5}],
    }


# accuracy task "acc" (chance 0.5, train length 64) and perplexity task "ppl" (uniform perplexity 256)
ACC = {  # encoding -> length -> score, same for both seeds
    "alpha": {64: 1.0, 128: 0.75, 256: 0.75},  # normalised ID 1.0, OOD 0.5
    "beta": {64: 0.9, 128: 0.5, 256: 0.4},  # normalised ID 0.8, OOD 0.0 (0.4 is below chance: clipped)
    EVIL: {64: 0.6, 128: 0.55, 256: 0.55},  # normalised ID 0.2, OOD 0.1
    "solo": {64: 1.0, 128: 1.0, 256: 1.0},  # runs only this task: normalised ID 1, OOD 1
}
PPL = {
    "alpha": {64: 16.0, 128: 256.0},  # normalised 1 - ln16/ln256 = 0.5, then 0
    "beta": {64: 4.0, 128: 16.0},  # 0.75, then 0.5
    EVIL: {64: 2.0, 128: 4.0},  # 0.875, then 0.75
}


def make_db(url, second_run=True):
    """Two runs of hand-made results written to the new database at ``url``."""
    engine = db.open_db(url)
    runs = []
    for shift in (0.0, 0.05) if second_run else (0.0,):
        run_id = db.start_run(engine, RUN)
        for enc, by_len in ACC.items():
            for L, score in by_len.items():
                for seed in (0, 1):
                    s = score if enc != "alpha" else min(1.0, score + shift) if L > 64 else score
                    db.add_result(engine, run_id, record(enc, "acc", L, seed, s))
        for enc, by_len in PPL.items():
            for L, ppl in by_len.items():
                for seed in (0, 1):
                    db.add_result(engine, run_id, record(enc, "ppl", L, seed, ppl, chance=256.0, hib=False, vocab=256))
        db.add_result(engine, run_id, record("beta", "acc", 512, 0, None, status="diverged",
                                             message=f"loss went to nan {EVIL}"))  # fmt: skip
        db.finish_run(engine, run_id, "finished")
        runs.append(run_id)
    engine.dispose()
    return url, runs


def test_leaderboard_numbers_order_partial_and_deltas(db_url):
    url, runs = make_db(db_url)
    ctx = build_context(url, "latest")
    entries = {e.encoding: e for e in ctx["entries"]}
    # OOD: alpha (0.55 + 0) / 2 with the second run's +0.05 at OOD lengths; beta (0 + 0.5) / 2 -- its diverged case
    # at 512 counts as chance (0) -- ; EVIL (0.1 + 0.75) / 2; solo 1.0 on its one task
    assert entries["alpha"].ood.value == pytest.approx((0.6 + 0.0) / 2)
    assert entries["beta"].ood.value == pytest.approx((0.0 + 0.5) / 2)
    assert entries[EVIL].ood.value == pytest.approx((0.1 + 0.75) / 2)
    assert entries["solo"].ood.value == pytest.approx(1.0)
    assert entries["alpha"].id.value == pytest.approx((1.0 + 0.5) / 2)
    assert entries["beta"].id.value == pytest.approx((0.8 + 0.75) / 2)
    assert [e.encoding for e in ctx["entries"]] == [EVIL, "alpha", "beta", "solo"]
    assert entries["solo"].partial and (entries["solo"].n_tasks, entries["solo"].total_tasks) == (1, 2)
    assert not entries["alpha"].partial
    assert entries["beta"].failures == 1
    # two identical seeds: a degenerate interval of width 0
    assert entries["beta"].ood.half == pytest.approx(0.0)
    # deltas against the first run: alpha improved at OOD lengths of "acc" only
    assert entries["alpha"].ood.delta == pytest.approx(0.05 / 0.5 / 2, abs=1e-9)  # +0.1 normalised on 1 of 2 tasks
    assert entries["beta"].ood.delta == pytest.approx(0.0)
    assert ctx["previous_runs"] == [runs[0]]

    tasks = {t.key: t for t in ctx["tasks"]}
    ppl = tasks["ppl"]
    assert not ppl.higher_is_better and ppl.lengths == [64, 128]
    best_64 = [r.encoding for r in ppl.rows if r.cells[0].best]
    assert best_64 == [EVIL]  # lowest perplexity is best
    acc = tasks["acc"]
    col = acc.lengths.index(128)
    assert [r.encoding for r in acc.rows if r.cells[col].best] == ["solo"]
    gaps = {r.encoding: r.gap.value for r in acc.rows}
    assert gaps["alpha"] == pytest.approx(100 * (1.0 - 0.8))  # ID 100%, OOD mean 80% (after +5 points)
    assert gaps["beta"] == pytest.approx(100 * (0.9 - 0.45))
    assert ppl.rows[0].gap.value is not None
    gaps_ppl = {r.encoding: r.gap.value for r in ppl.rows}
    assert gaps_ppl["beta"] == pytest.approx(16.0 - 4.0)  # mean OOD minus ID perplexity
    alpha_row = next(r for r in acc.rows if r.encoding == "alpha")
    assert alpha_row.cells[col].delta == pytest.approx(5.0) and alpha_row.cells[col].delta_good
    # per-task rows best first: by the task's OOD normalised score (then ID score, then name)
    ood_of = [r.ood_norm.value for r in acc.rows]
    assert ood_of == sorted(ood_of, reverse=True) and len(acc.rows) == 4

    # how far (pebench.analysis.reach): solo keeps 1.0 up to 256 (4x); alpha and beta fall below 90% at 128; EVIL
    # (normalised 0.2 at the training length) has not learned "acc"; on "ppl" everyone falls below 90% at 128
    assert {r.encoding: r.reach.text for r in acc.rows} == {"solo": "4×", "alpha": "1×", "beta": "1×", EVIL: "–"}
    assert {r.reach.text for r in ppl.rows} == {"1×"}
    # the leaderboard counts them: on how many tasks each keeps 90% up to 2x and 4x (no median column, issue 91)
    assert {e: (entries[e].keeps_2x, entries[e].keeps_4x) for e in entries} == \
        {"solo": (1, 1), "alpha": (0, 0), "beta": (0, 0), EVIL: (0, 0)}  # fmt: skip
    assert all(entries[e].seeds_text == str(entries[e].n_seeds) for e in entries)  # every cell has its seeds


def test_page_escapes_database_strings_and_is_self_contained(db_url, tmp_path):
    url, _ = make_db(db_url)
    info = render_report(url, tmp_path / "lb.html", "latest")
    html = info.path.read_text()
    assert len(re.findall(r"<script\b", html, flags=re.I)) == 1  # only the page's own script
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "loss went to nan &lt;script&gt;" in html  # the failure message is text
    assert not re.search(r"(src|href)=\"https?:", html)  # nothing from the network
    assert "<svg" in html and 'id="leaderboard-table"' in html
    assert "abcdef0123 (dirty)" in html and "cpu:test" in html


def test_run_selection(db_url):
    url, runs = make_db(db_url)
    assert build_context(url, runs[0])["previous_runs"] == []
    everything = build_context(url, "all")
    assert everything["header"]["n_cases"] == build_context(url, "latest")["header"]["n_cases"]
    assert everything["superseded"] == everything["header"]["n_cases"]
    with pytest.raises(ReportError, match="latest, previous or all"):
        build_context(url, "newest")
    with pytest.raises(DatabaseError, match="unknown run id 99"):
        build_context(url, 99)



def test_a_default_protocol_page_counts_every_rate_and_flags_nothing_the_protocol_does_by_design(lr_run, tmp_path):
    """Cells of the learning-rate protocol chose different rates (rope 1e-3, learned 3e-3): the page shows each at its
    chosen rate, counts the models of every rate as trained for it, and neither calls the unchosen rates superseded
    nor the chosen rates' different config hashes several configurations of one pair."""
    for run in ("all", "1"):
        ctx = build_context(lr_run, run)
        h = ctx["header"]
        assert ctx["superseded"] == 0 and h["n_configs"] == 1, run
        assert h["n_cases"] == 4 and h["n_models"] == 4 and h["n_trained"] == 4 and h["all_train_time"] == "6.7 min"
        assert ctx["lr_protocol"]["rates"] == "0.001,0.003"
    page = tmp_path / "p.html"
    render_report(lr_run, page, "all")
    html = page.read_text()
    assert "several configurations" not in html and "superseded" not in html and "4 models · 4 trained" in html
    # the rates are summarised, not ranked point by point, and no "None" (issue 65)
    assert ctx["lr_rates"] == {"rates": ["1e-3", "3e-3"], "rows": [
        {"encoding": e, "color": ctx["colors"][e], "counts": [int(e == "rope"), int(e == "learned")]}
        for e in [entry.encoding for entry in ctx["entries"]]]}  # fmt: skip
    assert ctx["sweep"] == [] and "the learning rates chosen" in html and "None" not in html
    assert ctx["tasks"][0].config_text.startswith("learning rate per cell: 1e-3 (1 cell), 3e-3 (1) · ")


def test_empty_database_gives_a_page_that_says_so(db_url, tmp_path):
    url = db_url
    db.open_db(url).dispose()
    info = render_report(url, tmp_path / "lb.html")
    html = info.path.read_text()
    assert 'id="no-results"' in html and "no runs yet" in html
    assert info.n_results == 0


def test_cli_report(tmp_path, capsys):
    url, _ = make_db(f"sqlite:///{tmp_path / 'r.db'}", second_run=False)
    out = tmp_path / "page.html"
    assert cli_main(["report", "--db", url, "-o", str(out)]) == 0
    assert out.exists() and "wrote" in capsys.readouterr().out
    assert cli_main(["report", "--db", url, "--run", "bogus", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("pebench: error: --run 'bogus'") and len(err.strip().splitlines()) == 1
    assert cli_main(["report", "--db", f"sqlite:///{tmp_path / 'missing.db'}", "-o", str(out)]) == 2
    assert "no such database file" in capsys.readouterr().err
    assert cli_main(["report", "--db", url, "-o", str(tmp_path / "nodir" / "x.html")]) == 2
    assert "does not exist" in capsys.readouterr().err


@pytest.mark.slow
def test_ten_thousand_results_render_fast_and_small(tmp_path):
    from pebench.report import synthetic

    spec = synthetic.standard_spec(10_000)
    assert spec.n_results == 10_000
    url = f"sqlite:///{tmp_path / 'big.db'}"
    engine = db.open_db(url)
    synthetic.write_run(engine, synthetic.records(spec))
    engine.dispose()
    start = time.perf_counter()
    info = render_report(url, tmp_path / "big.html")
    seconds = time.perf_counter() - start
    print(f"\n10,000 results: {info.size_bytes / 1e6:.2f} MB rendered in {seconds:.2f} s")
    assert info.n_results == 10_000
    assert info.size_bytes < 5_000_000
    assert seconds < 30  # the goal is < 10 s; this bound leaves room for a loaded shared machine


def test_runner_stores_last_layer_attention_at_the_training_length():
    from pebench.engine.runner import ATTENTION_TOKENS, Case, Runner
    from pebench.engine.settings import Settings

    runner = Runner(Settings(steps=2, d_model=16, n_layers=2, n_heads=2, batch_size=4, eval_samples=4, device="cpu"))
    rec = runner.run(Case("alibi", "k_back", 64, 0))
    att = rec.metrics["attention"]
    assert att["layer"] == 1 and att["scale"] == 1000 and len(att["tokens"]) == ATTENTION_TOKENS
    assert len(att["heads"]) == 2
    for head in att["heads"]:
        assert [len(row) for row in head] == list(range(1, ATTENTION_TOKENS + 1))  # causal lower triangle
        for row in head:
            assert abs(sum(row) - 1000) <= math.ceil(len(row) / 2)  # probabilities, rounded to thousandths
    assert "attention" not in runner.run(Case("alibi", "k_back", 128, 0)).metrics
    # the decoder the report uses gives back the probabilities to within the rounding
    heads = attention.decode(att)
    assert len(heads) == 2 and heads[0].shape == (ATTENTION_TOKENS, ATTENTION_TOKENS)
    assert all(abs(h.sum(axis=1) - 1).max() <= 0.02 and h[0, 1:].sum() == 0 for h in heads)  # causal rows of 1


def test_suite_report_option(run_suite, tiny, tmp_path):
    url = f"sqlite:///{tmp_path / 'r.db'}"
    page = tmp_path / "lb.html"
    args = [
        "--encoding",
        "rope",
        "-k",
        "k_back and L64",
        "--steps",
        "2",
        "--db",
        url,
        "--no-cache",
        "--report",
        str(page),
        *tiny,
    ]
    proc = run_suite(*args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "leaderboard -> " in proc.stdout
    html = page.read_text()
    assert "rope" in html and "k_back" in html and "#1 (finished)" in html
    bad = run_suite("--report", str(tmp_path / "nodir" / "lb.html"), "--db", url)
    assert bad.returncode != 0 and "--report" in bad.stderr and "existing directory" in bad.stderr


def test_the_header_names_the_encodings_asked_for_that_the_page_does_not_show(tmp_path):
    """A run asked for rope, coupling and alibi on k_back; coupling applies to no task run (it needs coupled
    positions) and alibi's cases were deselected: the header says so beside the count of encodings shown."""
    url = f"sqlite:///{tmp_path / 'r.db'}"
    engine = db.open_db(url)
    run_id = db.start_run(engine, {**RUN, "options": {"encoding": "rope,coupling,alibi", "task": "k_back"}})
    db.add_result(engine, run_id, record("rope", "k_back", 64, 0, 0.9))
    db.finish_run(engine, run_id, "finished")
    engine.dispose()
    header = build_context(url, "latest")["header"]
    assert header["n_encodings"] == 1
    assert header["not_shown"] == ["coupling needs coupled_position annotations, which task k_back does not provide",
                                   "alibi: no case of it shown"]  # fmt: skip
    render_report(url, tmp_path / "page.html", run="latest")
    text = (tmp_path / "page.html").read_text()
    assert "asked for, not shown" in text and "alibi: no case of it shown" in text
