"""The page's "Across scale" section (issue 69): a run at another model size (a ``--sweep d_model=...`` run) is set
aside from the page's ranking and compared with it -- the two sizes never share a ranking -- with the known tau of a
hand-made pair of orders."""

import pytest

from pebench import store as db
from pebench.analysis.findings.output import run_findings
from pebench.case import Point
from pebench.report import build_context, render_report

RUN = {"package_version": "0", "torch_version": "t", "python_version": "3", "device": "cpu:test", "host": "h",
       "git_commit": "abcdef0123456789", "git_dirty": False, "tier": "quick"}  # fmt: skip
TASKS = ["t1", "t2", "t3"]
DEFAULT = {"a": 0.95, "b": 0.85, "c": 0.75, "d": 0.65, "e": 0.55}  # accuracy at 2x the training length, chance 0.5
LARGER = {"a": 0.70, "b": 0.90, "c": 0.80, "d": 0.75, "e": 0.60}  # a falls from first to fourth: 3 of 10 pairs swap


def record(enc: str, task: str, length: int, seed: int, score: float, point: str, d_model: int,
           val: float = 0.5) -> dict:  # fmt: skip
    at = f"-{point}" if point else ""
    return {
        "case_id": f"{enc}-{task}-L{length}{at}", "axes": Point.parse(point, {"d_model", "lr"}).stored(),
        "encoding": enc, "encoding_version": "1",
        "task": task, "task_version": "1", "train_length": 32, "eval_length": length, "seed": seed,
        "config": {"model": {"vocab_size": 16, "d_model": d_model, "n_layers": 2, "n_heads": 4},
                   "train": {"steps": 5, "lr": 0.001}},
        "config_hash": f"h-{enc}-{task}-{d_model}", "status": "ok", "metric": "accuracy", "higher_is_better": True,
        "chance_level": 0.5, "score": score, "train_time_s": 1.0, "model_reused": length != 32, "metrics": {},
        "curve": [{"step": 1, "loss": 2.0, "accuracy": 0.1},
                  {"step": 5, "loss": 1.0, "accuracy": 0.5, "val_accuracy_1x": val}],
    }  # fmt: skip


def write(url: str, scores: dict[str, float], point: str, d_model: int, options: dict, seeds: int,
          more: dict[str, tuple[dict[str, float], dict[str, float]]] | None = None) -> None:  # fmt: skip
    """One run of ``scores`` at ``point``, and at each point of ``more``: (scores, validations) there."""
    engine = db.open_db(url)
    run_id = db.start_run(engine, dict(RUN, options=options))
    for at, (by_enc, vals) in {point: (scores, {}), **(more or {})}.items():
        for enc, s in by_enc.items():
            for task in TASKS:
                for seed in range(seeds):
                    v = vals.get(enc, 0.5)
                    db.add_result(engine, run_id, record(enc, task, 32, seed, 1.0, at, d_model, v))
                    db.add_result(engine, run_id, record(enc, task, 64, seed, s, at, d_model, v))
    db.finish_run(engine, run_id, "finished")
    engine.dispose()


@pytest.fixture
def two_sizes(tmp_path):
    url = f"sqlite:///{tmp_path / 'two.db'}"
    write(url, DEFAULT, "", 128, {"sweep": [], "lr_sweep": None}, seeds=2)
    write(url, LARGER, "d_model256", 256, {"sweep": ["d_model=256"], "lr_sweep": None}, seeds=1)
    return url


def test_the_larger_model_is_compared_across_scale_and_never_ranked_with_the_default(two_sizes, tmp_path):
    ctx = build_context(two_sizes, "all")
    # the page's ranking is the default size's alone: five rows, a first, the larger run's rows in no cell
    assert [e.encoding for e in ctx["entries"]] == ["a", "b", "c", "d", "e"]
    assert ctx["entries"][0].ood.value == pytest.approx(0.9)  # (0.95 - 0.5) / 0.5, not a mean with 0.4
    (view,) = ctx["across_scale"]
    assert view.point == "d_model256" and view.protocol == "one learning rate"
    assert view.result.overall.tau == pytest.approx((7 - 3) / 10)
    assert dict(view.per_task) == {t: f"{(7 - 3) / 10:.2f} [0.40, 0.40]" for t in TASKS}  # same cells: no doubt
    moved = {row[0]: row[4] for row in view.rows}
    assert moved["a"] == "↓" and view.rows[0][2:4] == ("1", "4")
    assert "The leader a does not stay in the first tie group" in view.sentence
    out = tmp_path / "page.html"
    render_report(two_sizes, out, "all")
    html = out.read_text()
    assert '<section id="across-scale">' in html and 'data-point="d_model256"' in html
    # one run, or a sweep run alone: nothing is set aside, and a page of the larger run is its own ranking
    assert build_context(two_sizes, 1)["across_scale"] == []
    alone = build_context(two_sizes, 2)
    assert alone["across_scale"] == [] and [e.encoding for e in alone["entries"]][0] == "b"
    # the findings of --run all test the default size only (not a mix of the two sizes' cells)
    assert run_findings(two_sizes, "all").runs == [1]


def test_a_protocol_page_also_compares_at_the_larger_runs_own_rate(tmp_path):
    """On a learning-rate protocol page each cell is at its chosen rate; the larger model ran one rate, so the
    section adds the like-for-like comparison with the default size's results at that rate."""
    url = f"sqlite:///{tmp_path / 'protocol.db'}"
    at_3e3 = {"a": 0.60, "b": 0.55, "c": 0.55, "d": 0.55, "e": 0.55}  # a validates best at 3e-3 and scores 0.2 there
    write(url, DEFAULT, "lr0.001", 128, {"sweep": [], "lr_sweep": "0.001,0.003"}, seeds=1,
          more={"lr0.003": (at_3e3, {"a": 0.9, "b": 0.1, "c": 0.1, "d": 0.1, "e": 0.1})})
    write(url, DEFAULT, "d_model256", 256, {"sweep": ["d_model=256"], "lr_sweep": None, "lr": 0.001}, seeds=1)
    ctx = build_context(url, "all")
    assert [e.encoding for e in ctx["entries"]] == ["b", "c", "d", "a", "e"]  # a at its chosen 3e-3
    (view,) = ctx["across_scale"]
    assert view.result.overall.tau == pytest.approx((7 - 3) / 10)  # against the chosen rates: a moved
    assert view.same_rate.startswith("Against the default size at the same learning rate (0.001 in every cell, its "
                                     "lr0.001 results") and "τ-b 1.00 [1.00, 1.00]" in view.same_rate  # fmt: skip


def test_the_light_per_seed_reader_gives_what_the_tables_gather(tmp_path):
    """:func:`pebench.report.scale.ood_per_seed` reads the leaderboard's input without building the tables: the
    same numbers as :func:`pebench.report.views.assemble` on a run with a task at two training lengths (keys
    ``task@L``), a lower-is-better metric, several seeds and a failed cell."""
    from pebench.report import synthetic, views
    from pebench.report.scale import ood_per_seed
    from pebench.store import load as store_load

    tasks = [synthetic.SynthTask("k_back", 32, (32, 64, 128)), synthetic.SynthTask("k_back", 64, (64, 128)),
             synthetic.SynthTask("lm", 64, (64, 128, 256), metric="perplexity")]  # fmt: skip
    spec = synthetic.SynthSpec(["rope", "alibi", "nope"], tasks, seeds=3, curve_points=2, attention=False,
                               statuses={("alibi", "lm", 256, 1): ("error", "boom")})  # fmt: skip
    url = f"sqlite:///{tmp_path / 's.db'}"
    engine = db.open_db(url)
    synthetic.write_run(engine, synthetic.records(spec))
    sel = store_load.attach_json(engine, store_load.load_light(engine))
    engine.dispose()
    gathered = views.assemble(sel, sel.iloc[0:0]).ood_per_seed
    assert set(gathered["rope"]) == {"k_back@32", "k_back@64", "lm"}
    assert set(gathered["alibi"]["lm"]) == {0, 1, 2}
    assert ood_per_seed(sel) == gathered
