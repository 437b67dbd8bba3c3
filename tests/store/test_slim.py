"""``pebench merge --slim``, how the shipped reference is kept small: attention snapshots dropped, each model's
learning curve kept once (on its training-length result) and thinned, and nothing the page, the findings or the
learning-rate choice read is lost (issue 29, item 5)."""

import sqlite3

from pebench.analysis import lr
from pebench.cli import main
from pebench.report import build_context
from pebench.store.load import load
from pebench.store.merge import SLIM_POINTS, thin


def test_thin_keeps_the_ends_that_are_read_and_spaces_the_rest():
    points = [{"step": s, "val_1x": (0.1 * s if s % 5 == 0 else None)} for s in range(1, 31)]  # validated: 5, ..., 30
    kept = thin(points)
    steps = [p["step"] for p in kept]
    assert len(kept) <= SLIM_POINTS and steps == sorted(steps) and len(set(steps)) == len(steps)
    assert steps[-1] == 30 and len(steps) >= SLIM_POINTS - 3  # the last point, and about as many as allowed
    gaps = {b - a for a, b in zip(steps[1:-1], steps[2:], strict=False)}
    assert len(gaps) == 1  # evenly spaced
    no_val_at_end = points[:27]  # last point 27, last validated 25: both kept
    assert {25, 27} <= {p["step"] for p in thin(no_val_at_end)}
    assert thin(points[:4]) == points[:4]  # short curves as they are


def test_a_slim_merge_keeps_what_is_read_and_drops_the_rest(run_suite, tiny, tmp_path, capsys):
    part = tmp_path / "part.db"
    url = f"sqlite:///{part}"
    proc = run_suite("--encoding", "rope,alibi", "--task", "k_back", "-k", "L64 or L128", *tiny, "--steps", "24",
                     "--no-cache", "--seeds", "2", "--db", url, lr_protocol=True)  # fmt: skip
    assert proc.returncode == 0, proc.output
    full, small = tmp_path / "full.db", tmp_path / "slim.db"
    assert main(["merge", str(part), "-o", str(full)]) == 0
    assert main(["merge", str(part), "-o", str(small), "--slim"]) == 0
    capsys.readouterr()
    a, b = load(f"sqlite:///{full}"), load(f"sqlite:///{small}")
    assert len(a) == len(b) == 2 * 2 * 2 * 2  # encodings x rates x lengths x seeds
    assert any("attention" in m for m in a["metrics"]) and not any("attention" in m for m in b["metrics"])
    assert "attention snapshots dropped" in b["run_options"].iloc[0]["slim"]
    assert "slim" not in a["run_options"].iloc[0] and b["run_command"].iloc[0].endswith("--slim")
    with sqlite3.connect(small) as db:
        per_result = dict(db.execute("SELECT result_id, count(*) FROM curve_points GROUP BY result_id").fetchall())
        at_train = {r for (r,) in db.execute("SELECT id FROM results WHERE eval_length = train_length")}
    assert set(per_result) == at_train and len(at_train) == 8  # once per model (2 x 2 x 2 seeds)
    assert max(per_result.values()) <= SLIM_POINTS < 24  # the full run has a point per step
    # the same cells are chosen at the same rates, and the page renders with its curves
    key = ["case_id", "seed", "score"]
    chosen_full = lr.at_chosen_rates(f"sqlite:///{full}", a)[key].sort_values(key).reset_index(drop=True)
    chosen_slim = lr.at_chosen_rates(f"sqlite:///{small}", b)[key].sort_values(key).reset_index(drop=True)
    assert chosen_full.equals(chosen_slim) and len(chosen_slim) == 8
    page = build_context(f"sqlite:///{small}", "latest")
    for chart in ("curves_svg", "validation_svg"):  # one line per encoding
        assert str(page[chart]).count("<polyline") >= 2, chart
    assert "attention snapshots dropped" in page["slim"]
    assert build_context(f"sqlite:///{full}", "latest")["slim"] is None
    html = tmp_path / "slim.html"
    assert main(["report", "--db", f"sqlite:///{small}", "-o", str(html)]) == 0
    assert "No attention maps: this run was merged to ship" in html.read_text()
    assert small.stat().st_size < full.stat().st_size
