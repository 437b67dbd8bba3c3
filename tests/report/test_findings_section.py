"""The report's *Findings* section on a hand-made run: every registered finding with its verdict, the checks with
their numbers, and for one not run the missing cases and the command that runs them."""

import html
import re

from pebench import store as db
from pebench.analysis.findings import FINDINGS
from pebench.analysis.stats import estimate
from pebench.report import build_context, render_report

RUN = {"package_version": "0", "torch_version": "t", "python_version": "3", "device": "cpu:test", "host": "h"}


def record(enc, task, length, seed, score, *, metric="accuracy", chance=0.02):
    return {"case_id": f"{enc}-{task}-L{length}", "encoding": enc, "encoding_version": "1", "task": task,
            "task_version": "1", "train_length": 64, "eval_length": length, "seed": seed,
            "config": {"model": {"vocab_size": 260}}, "config_hash": f"{enc}-{task}", "status": "ok",
            "metric": metric, "higher_is_better": metric != "perplexity", "chance_level": chance,
            "score": score}  # fmt: skip


def make_db(path):
    """rope and learned on k_back at 64 and 128 (2x), two seeds; alibi and rope on lm, no sinusoidal."""
    url = f"sqlite:///{path}"
    engine = db.open_db(url)
    run_id = db.start_run(engine, RUN)
    recs = [record("rope", "k_back", 64, s, 1.0) for s in (0, 1)]
    recs += [record("rope", "k_back", 128, s, v) for s, v in ((0, 0.96), (1, 0.98))]
    recs += [record("learned", "k_back", 64, s, 1.0) for s in (0, 1)]
    recs += [record("learned", "k_back", 128, s, v) for s, v in ((0, 0.45), (1, 0.55))]
    recs += [record(e, "lm", 64, 0, p, metric="perplexity", chance=256.0) for e, p in (("alibi", 4.0), ("rope", 3.9))]
    for rec in recs:
        db.add_result(engine, run_id, rec)
    db.finish_run(engine, run_id, "finished")
    engine.dispose()
    return url


def _row(page: str, name: str) -> str:
    start = page.index(f'id="finding-{name}"')
    return page[start : page.index("</tr>", start)]


def test_the_findings_section_shows_verdicts_numbers_and_commands(tmp_path):
    url = make_db(tmp_path / "r.db")
    ctx = build_context(url, "latest")
    assert [f["name"] for f in ctx["findings"]] == [f.name for f in FINDINGS.items()]
    render_report(url, tmp_path / "lb.html", "latest")
    page = (tmp_path / "lb.html").read_text(encoding="utf-8")
    assert '<a href="#findings">Findings</a>' in page and '<section id="findings">' in page

    seed002 = html.unescape(_row(page, "seed002-k_back"))
    assert '<span class="verdict holds">holds</span>' in seed002 and "2 seeds" in seed002
    rope = estimate([0.96, 0.98])
    assert "accuracy(rope, k_back @ 2×) ≥ 0.95" in seed002
    assert f"0.970 [{rope.low:.3f}, {rope.high:.3f}] ≥ 0.95" in seed002
    assert "accuracy(learned, k_back @ 2×) ≤ 0.65" in seed002 and "0.500 [" in seed002
    assert "seed study 002" in seed002

    lm = html.unescape(_row(page, "seed000-lm-order"))
    assert '<span class="verdict notrun">not run</span>' in lm
    assert "not in the run: sinusoidal-lm-L64" in lm
    assert "<code>pebench run --encoding alibi,rope,sinusoidal --task lm</code>" in lm
    # the part that could be checked is: 4.0 / 3.9 is within 5%
    assert "perplexity(alibi, lm @ 1×) ≈ perplexity(rope, lm @ 1×) (within 5% relative)" in lm
    assert "4.00 ≈ 3.90" in lm and '<li class="holds">' in lm

    parity = html.unescape(_row(page, "deletang2023-parity"))
    assert "not in the run: task parity" in parity and "--task parity</code>" in parity
    assert len(re.findall(r'<span class="verdict notrun">', page)) == len(FINDINGS.items()) - 1


def test_no_findings_section_without_results(tmp_path):
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    db.open_db(url).dispose()
    render_report(url, tmp_path / "lb.html", "latest")
    assert 'id="findings"' not in (tmp_path / "lb.html").read_text(encoding="utf-8")
