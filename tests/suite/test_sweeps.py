"""``--sweep``: one more case axis over a setting or an option (issue 30, item 1). Each point is its own model with
its own id part and config hash, selected by ``-k``, reused, shown apart; bad input is one line before training."""

import sqlite3

import pandas as pd
import pytest

from pebench.analysis.sweeps import PointError, one_point
from pebench.case import Case, Point, by_point, point_of
from pebench.engine.runner import Runner
from pebench.engine.settings import Settings
from pebench.engine.sweep import Sweep
from pebench.errors import PebenchError
from pebench.store.load import load


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["layerz=1,2"], "unknown setting 'layerz'; valid: batch_size, d_model, eval_samples, extend_lr, "
                         "extend_steps, heads, layers, lr, "),
        (["layers=1,x"], "layers='x' is not an int"),
        (["lr=1e-3,"], "has an empty value"),
        (["layers=1,1"], "lists a value twice"),
        (["layers=1,2", "layers=3"], "layers is swept twice"),
        (["precision=fp64"], "precision='fp64' is invalid; valid: fp32, bf16, tf32, auto"),
        (["nosuch:base=1,2"], "'nosuch' is no encoding or task"),
        (["rope:colour=1,2"], "encoding rope has no option 'colour'; valid options: base"),
        (["rope:base=-3,100"], "option base='-3' is out of range"),
        (["layers"], "must look like NAME=V1,V2"),
        (["lr=0.1;rm"], "value '0.1;rm' may hold only letters"),
    ],
)
def test_a_bad_sweep_is_one_line(args, message):
    with pytest.raises(PebenchError) as err:
        Sweep.parse(args)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_points_apply_where_they_belong():
    sweep = Sweep.parse(["layers=1,2", "lr=1e-2,3e-3", "rope:base=100,10000"])
    assert [str(p) for p in sweep.points("alibi", "k_back")] == ["layers1-lr0.01", "layers1-lr0.003", "layers2-lr0.01",
                                                                "layers2-lr0.003"]  # fmt: skip
    assert len(sweep.points("rope", "k_back")) == 8
    assert Point.of(layers=2, lr="0.01", base=100) in sweep.points("rope", "k_back")
    assert Sweep.parse(["k_back:k=2,3"]).points("rope", "copy") == [Point()]
    s = sweep.settings(Settings(d_model=32), Point.of(layers=2, lr="0.01", base=100))
    assert (s.n_layers, s.lr, s.d_model, s.encoding_options["rope"]["base"]) == (2, 0.01, 32, 100.0)
    with pytest.raises(PebenchError, match="--heads"):  # each point's settings pass the settings' own checks
        Sweep.parse(["heads=3"]).settings(Settings(d_model=32), Point.of(heads=3))
    with pytest.raises(PebenchError, match="unknown sweep point 'layers3' \\(layers3 is swept by no axis\\)"):
        sweep.settings(Settings(), Point.of(layers=3))


def test_a_point_is_a_typed_mapping_read_back_with_its_axes():
    """The point of a case is axis -> value; its id text reads back only with the axes' names, the one of the most
    axes when several readings exist, and a sweep refuses a value whose id would read back as another point."""
    point = Point.of(layers=4, lr="1e-05")
    assert dict(point) == {"layers": "4", "lr": "1e-05"} and str(point) == "layers4-lr1e-05" and point["lr"] == "1e-05"
    assert not Point() and str(Point()) == "" and Point() != ""
    names = Sweep.parse(["layers=4", "lr=1e-5", "precision=bf16", "rope:base=100"]).names
    for text in ("lr1e-05", "layers4-lr1e-05", "precisionbf16", "base100-layers4"):
        assert str(Point.parse(text, names)) == text
    assert Point.parse("precisionbf16", names) == Point.of(precision="bf16")  # no split without the names
    with pytest.raises(ValueError, match="is no point of the axes"):
        Point.parse("heads4", names)
    # "lr_max" and "lr" are both names: "lr_max0.1" reads two ways with one axis each
    with pytest.raises(ValueError, match="splits into more than one point"):
        Point.parse("lr_max0.1", ("lr", "lr_max"))
    with pytest.raises(PebenchError, match="would make the case id short_factorones-layers4 read back as another"):
        Sweep.parse(["longrope:short_factor=ones-layers4", "layers=4"])
    with pytest.raises(TypeError, match="Case.point is a Point"):
        Case("rope", "k_back", 64, 0, "layers4")


def test_each_point_is_its_own_configuration():
    runner = Runner(Settings(d_model=16, n_heads=2, device="cpu"), sweep=Sweep.parse(["layers=1,3"]))
    a, b, plain = (Case("rope", "k_back", 64, 0, p) for p in (Point.of(layers=1), Point.of(layers=3), Point()))
    assert runner.describe(a)["model"]["n_layers"] == 1 and runner.describe(b)["model"]["n_layers"] == 3
    assert len({runner.model_key(a), runner.model_key(b), runner.model_key(plain)}) == 3
    # a point at the run's own value is the same model as no sweep (the same configuration)
    assert Runner(Settings(d_model=16, n_heads=2), sweep=Sweep.parse(["layers=2"])).model_key(
        Case("rope", "k_back", 64, 0, Point.of(layers=2))) == runner.model_key(plain)
    names = ("layers", "lr", "steps", "base", "n_pairs")
    assert a.id == "rope-k_back-L64-layers1" and Case.parse("rope-k_back-L64-layers1-s2", names)[0] == \
        Case("rope", "k_back", 64, 2, Point.of(layers=1))  # fmt: skip
    assert Case.parse("rope-k_back-L64-s2")[0] == Case("rope", "k_back", 64, 2)
    with pytest.raises(ValueError, match="not a case id of these sweep axes"):
        Case.parse("rope-k_back-L64-layers1")  # a point needs the axes to be read
    for text in ("lr1e-05", "layers4-lr0.01", "steps600", "base100-n_pairs8"):
        case = Case("rope", "k_back", 64, 3, Point.parse(text, names))
        assert Case.parse(case.test_id(seeded=True), names) == (case, True) and str(case.point) == text
        assert point_of(case.id) == text


def test_results_of_points_are_shown_apart():
    ids = ["rope-k_back-L64-base100", "rope-k_back-L64-base500", "alibi-k_back-L64"]
    assert by_point(ids, point_of) == {"base100": ["alibi-k_back-L64", "rope-k_back-L64-base100"],
                                  "base500": ["alibi-k_back-L64", "rope-k_back-L64-base500"]}  # fmt: skip
    assert by_point(["alibi-k_back-L64"], point_of) == {"": ["alibi-k_back-L64"]}


def test_a_two_value_sweep_trains_two_models_and_reuses_each(run_suite, tiny, tmp_path):
    db = tmp_path / "r.db"
    url = f"sqlite:///{db}"
    args = ("--encoding", "rope,alibi", "--task", "k_back", "-k", "L64", *tiny, "--steps", "4", "--db", url,
            "--no-cache", "--sweep", "layers=1,2")
    first = run_suite(*args, "--report", str(tmp_path / "page.html"))
    assert first.returncode == 0, first.output
    df = load(url)
    assert sorted(df["case_id"]) == ["alibi-k_back-L64-layers1", "alibi-k_back-L64-layers2", "rope-k_back-L64-layers1",
                                     "rope-k_back-L64-layers2"]  # fmt: skip
    assert df["config_hash"].nunique() == 4
    assert sorted(df["point"]) == ["layers1", "layers1", "layers2", "layers2"]  # the point in its own column
    assert sorted(c["model"]["n_layers"] for c in df["config"]) == [1, 1, 2, 2]
    assert "k_back (train length 64, at layers1)" in first.stdout and "at layers2" in first.stdout
    for point in ("layers1", "layers2"):  # one page per point, each with the rankings across the sweep
        page = (tmp_path / f"page-{point}.html").read_text()
        assert 'id="sweep"' in page and f"sweep point <b>{point}</b>" in page and "reference" in page
    again = run_suite(*args, "--reuse")
    assert again.returncode == 0, again.output
    assert "pebench --reuse: 4 of 4 results copied" in again.stdout
    one = run_suite("--encoding", "rope", "--task", "k_back", "-k", "L64 and layers2", *tiny, "--steps", "4", "--db",
                    url, "--no-cache", "--sweep", "layers=1,2")  # fmt: skip
    assert one.returncode == 0 and "1 passed" in one.stdout, one.output
    with sqlite3.connect(db) as con:
        options = con.execute("SELECT options FROM runs ORDER BY id DESC LIMIT 1").fetchone()[0]
    assert '"sweep": ["layers=1,2"]' in options


def test_a_bad_sweep_stops_the_suite_in_one_line_writing_nothing(run_suite, tiny, tmp_path):
    url = f"sqlite:///{tmp_path / 'r.db'}"
    proc = run_suite("-k", "rope and k_back and L64", *tiny, "--db", url, "--sweep", "layers=0,1")
    assert proc.returncode == 4 and "--layers" in proc.stderr and "Traceback" not in proc.stderr, proc.output
    assert not (tmp_path / "r.db").exists()
    proc = run_suite("-k", "rope and k_back", *tiny, "--db", url, "--sweep", "k_back:k=100", "--task", "k_back")
    assert proc.returncode == 4 and "task k_back: length 64 is too short" in proc.stderr, proc.output
    proc = run_suite(*tiny, "--db", url, "--sweep", "layers=1,2", "--seeds", "auto")
    assert proc.returncode == 4 and "give a number of seeds with --sweep" in proc.stderr, proc.output


def test_the_report_and_findings_rank_one_point_at_a_time():
    df = pd.DataFrame({"case_id": ["rope-k_back-L64-layers1", "rope-k_back-L64-layers2", "alibi-copy-L32"],
                       "point": ["layers1", "layers2", ""]})
    with pytest.raises(PointError, match=r"2 sweep points \(layers1, layers2\); .* give --point POINT"):
        one_point(df, None)
    assert list(one_point(df, "layers2")["case_id"]) == ["rope-k_back-L64-layers2", "alibi-copy-L32"]
    with pytest.raises(PointError, match="--point 'layers3' is not among .*: layers1, layers2"):
        one_point(df, "layers3")


def test_scale_presets_grow_width_depth_heads_and_steps():
    runner = Runner(Settings(), sweep=Sweep.parse(["scale=tiny,small,base"]))
    sizes = {}
    for point in runner.sweep.points("rope", "k_back"):
        config = runner.describe(Case("rope", "k_back", 64, 0, point))
        sizes[str(point)] = (config["model"]["d_model"], config["model"]["n_layers"], config["model"]["n_heads"],
                        config["train"]["steps"])  # fmt: skip
    assert sizes == {"scaletiny": (128, 2, 4, 200), "scalesmall": (256, 4, 8, 300), "scalebase": (384, 6, 8, 400)}
    assert Runner(Settings()).describe(Case("rope", "k_back", 64)) == \
        runner.describe(Case("rope", "k_back", 64, 0, Point.of(scale="tiny")))  # fmt: skip
    small = Settings(scale="small", d_model=64, n_layers=1)  # factors on whatever the flags set
    assert (small.model_config(runner.task("k_back"), "nope").d_model, small.layers_for("nope")) == (128, 2)
    with pytest.raises(PebenchError, match="--scale 'huge' is invalid; valid: tiny, small, base"):
        Settings(scale="huge").check()
