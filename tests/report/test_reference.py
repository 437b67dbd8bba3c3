"""``--with-reference``: a run beside the reference results of the encodings it did not train, joined only where
the configuration is the same but for the encoding (issue 29 item 6); ``pebench results --stale`` (item 5)."""

import contextlib
import json
import re
import sqlite3

import pandas as pd
import pytest

from pebench import encodings, tasks
from pebench.analysis.reference import comparable_key, join, protocol_split, stale_text
from pebench.cli import main
from pebench.engine.code import code_version
from pebench.errors import PebenchError

pytestmark = pytest.mark.slow  # the inner loop (-m "not slow") leaves this module out


def _config(enc, layers=2, steps=200, version=2):
    return {"encoding": {"name": enc, "version": "1", "options": {}}, "max_len": 512,
            "task": {"name": "k_back", "version": version, "options": {}},
            "model": {"vocab_size": 50, "d_model": 128, "n_layers": layers, "n_heads": 4},
            "train": {"steps": steps, "lr": 0.003}, "eval": {"samples": 256}}  # fmt: skip


def _rows(specs):
    rows = []
    for i, (enc, task, length, config) in enumerate(specs):
        rows.append({"id": i, "run_id": 1, "case_id": f"{enc}-{task}-L{length}", "encoding": enc, "task": task,
                     "train_length": 64, "eval_length": length, "seed": 0, "config": config,
                     "code_version": "c1"})  # fmt: skip
    return pd.DataFrame(rows)


def test_only_comparable_cells_are_joined():
    run = _rows([("rope", "k_back", 64, _config("rope")), ("rope", "k_back", 128, _config("rope"))])
    ref = _rows([
        ("nope", "k_back", 64, _config("nope", layers=6)),  # its own default depth: comparable
        ("nope", "k_back", 512, _config("nope", layers=6)),  # a length the run does not have: left out
        ("rope", "k_back", 64, _config("rope")),  # the run's own encoding: never from the reference
        ("alibi", "k_back", 64, _config("alibi", version=1)),
        ("t5", "k_back", 64, _config("t5", steps=400)),
        ("xpos", "k_back", 64, _config("xpos", layers=4)),  # not its default depth
        ("alibi", "copy", 32, _config("alibi")),  # a task the run did not train
    ])  # fmt: skip
    joined = join(run, ref)
    assert list(joined.rows["case_id"]) == ["nope-k_back-L64"] and joined.encodings == ["nope"]
    assert joined.not_comparable == ["alibi on k_back: task k_back: version 1 in the reference, 2 here",
                                     "t5 on k_back: configuration differs: train.steps 400 vs 200",
                                     "xpos on k_back: configuration differs: model.n_layers 4 vs 'default'"]
    assert comparable_key(_config("nope", layers=6), "nope") == comparable_key(_config("rope"), "rope")
    assert comparable_key(_config("rope", layers=6), "rope") != comparable_key(_config("rope"), "rope")


def _wide(enc, layers=2):
    config = _config(enc, layers=layers)
    config["model"] = {**config["model"], "d_model": 256}
    return config


def _two_sizes():
    """nope at the default size and at d_model 256 (a point of its own: ``-d_model256`` in the case id), alibi at
    256 only."""
    ref = _rows([("nope", "k_back", 64, _config("nope", layers=6)), ("nope", "k_back", 64, _wide("nope", layers=6)),
                 ("alibi", "k_back", 64, _wide("alibi"))])  # fmt: skip
    return ref.assign(case_id=[c + ("-d_model256" if i else "") for i, c in enumerate(ref["case_id"])],
                      point=["d_model256" if i else "" for i in range(len(ref))],
                      axes=[[["d_model", "256"]] if i else [] for i in range(len(ref))])


def test_a_reference_cell_at_two_model_sizes_joins_only_the_comparable_size():
    """A reference holding a second model size beside the default (issue 69) puts each size beside a run of that
    size only: never a mix of the two in one cell, and a cell with no comparable size is listed with why."""
    ref = _two_sizes()
    default = join(_rows([("rope", "k_back", 64, _config("rope"))]), ref)
    assert list(default.rows["id"]) == [0]
    assert default.not_comparable == ["alibi on k_back: configuration differs: model.d_model 256 vs 128"]
    wide = join(_rows([("rope", "k_back", 64, _wide("rope"))]), ref)
    assert sorted(wide.rows["id"]) == [1, 2] and wide.not_comparable == []


def test_a_cell_with_results_of_the_runs_protocol_is_not_listed_as_left_out():
    ref = _two_sizes().assign(run_id=[1, 2, 2])
    protocols = {1: "0.001,0.003", 2: None}  # the default size at the default protocol, a larger one at one rate
    rows, out = protocol_split(ref, protocols, "0.001,0.003")
    assert list(rows["id"]) == [0]
    assert out == ["alibi on k_back: protocol differs (one learning rate in the reference, the best of the learning "
                   "rates 0.001,0.003 per cell here)"]  # fmt: skip
    rows, out = protocol_split(ref, protocols, None)
    assert list(rows["id"]) == [1, 2] and out == []


def test_the_page_puts_the_run_beside_the_reference(run_suite, tiny, tmp_path, capsys):
    ref, mine = f"sqlite:///{tmp_path / 'ref.db'}", f"sqlite:///{tmp_path / 'mine.db'}"
    common = ("--task", "k_back", "-k", "L64 or L128", *tiny, "--steps", "4", "--no-cache")
    assert run_suite("--encoding", "rope,alibi", *common, "--db", ref).returncode == 0
    page = tmp_path / "page.html"
    proc = run_suite("--encoding", "sinusoidal", *common, "--db", mine, "--report", str(page), "--with-reference", ref)
    assert proc.returncode == 0 and page.exists(), proc.output
    html = page.read_text()
    assert 'id="reference"' in html and "4 results of 2 encodings this run did not train" in html
    assert html.count('<span class="badge yours">yours</span>') >= 2  # leaderboard row and task row
    assert "data-v=\"alibi\"" in html and "data-v=\"rope\"" in html
    out = proc.stdout  # where it stands, in the terminal too (issue 71 item 4)
    overall = r"^sinusoidal: OOD score [\d.]+ \[[\d.]+, [\d.]+\] on the task shown, rank [123] of 3 \(95% range "
    near = r"(none|\w+ [\d.]+ \(rank \d\))"
    assert re.search(overall, out, re.M) and re.search(rf"^  just above: {near}; just below: {near}$", out, re.M), out
    assert re.search(r"^    k_back  [\d.]+  rank  [123] of 3   (best|within noise of|below the best)", out, re.M), out
    other = tmp_path / "other.html"  # another step budget: nothing joined, each pair listed with why
    assert run_suite("--encoding", "sinusoidal", *common[:-3], "--steps", "5", "--no-cache",
                     "--db", mine).returncode == 0  # fmt: skip
    assert main(["report", "--db", mine, "-o", str(other), "--with-reference", ref]) == 2  # nothing comparable
    assert f"--with-reference {ref}: none of its results is comparable with this run (alibi on k_back: configuration " \
           "differs: train.steps 4 vs 5; rope on k_back: configuration differs: train.steps 4 vs 5); train the run " \
           "at the reference's settings" in capsys.readouterr().err and not other.exists()  # fmt: skip


def test_the_learning_rate_protocols_are_never_joined(run_suite, tiny, tmp_path, capsys):
    ref, mine = f"sqlite:///{tmp_path / 'ref.db'}", f"sqlite:///{tmp_path / 'mine.db'}"
    common = ("--task", "k_back", "-k", "L64", *tiny, "--steps", "4", "--no-cache")
    # the reference at the default protocol (a model per rate, each cell at its chosen rate) ...
    assert run_suite("--encoding", "rope,alibi", *common, "--db", ref, lr_protocol=True).returncode == 0
    page = tmp_path / "page.html"
    proc = run_suite("--encoding", "sinusoidal", *common, "--db", mine, "--report", str(page), "--with-reference", ref,
                     lr_protocol=True)  # fmt: skip
    assert proc.returncode == 0, proc.output
    # ... joins one row per reference cell (its chosen rate of two), whatever rate the run's own cell chose
    assert "2 results of 2 encodings this run did not train" in page.read_text()
    # a run at one rate is not comparable with it: refused, each pair named with why
    assert run_suite("--encoding", "sinusoidal", *common, "--db", mine).returncode == 0  # --lr-sweep off
    assert main(["report", "--db", mine, "-o", str(tmp_path / "other.html"), "--with-reference", ref]) == 2
    assert "alibi on k_back: protocol differs (the best of the learning rates 0.001,0.003 per cell in the reference, " \
           "one learning rate here)" in capsys.readouterr().err  # fmt: skip


def test_stale_cells_are_listed(run_suite, tiny, tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'r.db'}"
    assert run_suite("--encoding", "rope,alibi", "--task", "k_back", "-k", "L64", *tiny, "--steps", "2",
                     "--no-cache", "--db", url).returncode == 0  # fmt: skip
    capsys.readouterr()
    assert main(["results", "--db", url, "--stale"]) == 0
    assert capsys.readouterr().out.strip() == "0 stale cell(s) of 2 (encoding, task) pairs"
    with sqlite3.connect(tmp_path / "r.db") as con:  # another source that computes the same: still current
        con.execute("UPDATE results SET code_version = 'old' WHERE encoding = 'alibi'")
    assert main(["results", "--db", url, "--stale"]) == 0
    assert capsys.readouterr().out.strip() == "0 stale cell(s) of 2 (encoding, task) pairs"
    with sqlite3.connect(tmp_path / "r.db") as con:  # alibi's results as made by code that computes otherwise
        row = con.execute("SELECT kind, name, options, \"values\", machine, created_at FROM fingerprints "
                          "WHERE name = 'alibi'").fetchone()  # fmt: skip
        values = json.loads(row[3])
        values["weights"] = [values["weights"][0] * (1 + 1e-6)]
        con.execute("INSERT INTO fingerprints VALUES ('other', ?, ?, ?, ?, ?, ?)",
                    (row[0], row[1], row[2], json.dumps(values), row[4], row[5]))  # fmt: skip
        con.execute("UPDATE results SET encoding_fingerprint = 'other' WHERE encoding = 'alibi'")
    assert main(["results", "--db", url, "--stale"]) == 0
    out = capsys.readouterr().out
    assert "alibi on k_back: computes otherwise" in out and "1 stale cell(s) of 2" in out
    # a reference with a stale cell is refused in one line before anything is trained or written (issue 33 item 4)
    mine, page = tmp_path / "mine.db", tmp_path / "page.html"
    proc = run_suite("--encoding", "sinusoidal", "--task", "k_back", "-k", "L64", *tiny, "--steps", "2",
                     "--no-cache", "--db", f"sqlite:///{mine}", "--report", str(page), "--with-reference", url)
    assert proc.returncode == 4 and "Traceback" not in proc.stderr, proc.output
    assert f"--with-reference {url}: 1 cell(s) (alibi on k_back) are not what this pebench computes; " \
           "rebuild them (pebench results --stale --db URL lists the cells" in proc.stderr  # fmt: skip
    assert not mine.exists() and not page.exists()
    assert run_suite("--encoding", "sinusoidal", "--task", "k_back", "-k", "L64", *tiny, "--steps", "2",
                     "--no-cache", "--db", f"sqlite:///{mine}").returncode == 0  # fmt: skip
    capsys.readouterr()
    assert main(["report", "--db", f"sqlite:///{mine}", "-o", str(page), "--with-reference", url]) == 2
    assert "1 cell(s) (alibi on k_back) are not what this pebench computes" in capsys.readouterr().err
    assert not page.exists()
    assert main(["report", "--db", f"sqlite:///{mine}", "-o", str(page), "--with-reference", url,
                 "--allow-stale"]) == 0  # fmt: skip
    assert "1 of them are not what this pebench computes" in page.read_text()
    assert main(["report", "--db", f"sqlite:///{mine}", "-o", str(page), "--allow-stale"]) == 2
    assert "give --with-reference [URL] too" in capsys.readouterr().err


def test_a_reference_from_other_code_than_the_run_is_named():
    run = _rows([("rope", "k_back", 64, _config("rope"))])
    ref = _rows([("nope", "k_back", 64, _config("nope", layers=6)), ("alibi", "k_back", 64, _config("alibi"))])
    ref["id"] = [1, 2]
    ref["code_version"] = [code_version(encodings.get("nope"), tasks.get("k_back")), "c0"]  # alibi: other code
    joined = join(run, ref)
    assert joined.stale == 1 and joined.stale_cells == ["alibi on k_back"]
    assert stale_text(joined).startswith("1 reference result(s) in 1 cell(s) (alibi on k_back) are not what this "
                                         "pebench computes; rebuild them")  # fmt: skip


def test_reference_errors_are_one_line(run_suite, tiny, tmp_path, capsys, monkeypatch):
    from pebench.analysis import reference

    monkeypatch.setattr(reference, "REFERENCE_FILE", tmp_path / "reference.db")  # a pebench without the shipped file
    with pytest.raises(PebenchError, match="no reference results ship with this pebench"):
        reference.reference_url(None)
    monkeypatch.undo()
    proc = run_suite("--encoding", "rope", "--task", "k_back", *tiny, "--db", f"sqlite:///{tmp_path / 'r.db'}",
                     "--with-reference", f"sqlite:///{tmp_path / 'ref.db'}")  # fmt: skip
    assert proc.returncode == 4 and "give --report PATH too" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "r.db").exists()
    url = f"sqlite:///{tmp_path / 'r.db'}"
    assert run_suite("--encoding", "rope", "--task", "k_back", "-k", "L64", *tiny, "--steps", "2", "--no-cache",
                     "--db", url).returncode == 0  # fmt: skip
    missing = f"sqlite:///{tmp_path / 'nope.db'}"
    assert main(["report", "--db", url, "-o", str(tmp_path / "p.html"), "--with-reference", missing]) == 2
    assert f"--with-reference {missing}: no such database file" in capsys.readouterr().err
    assert not (tmp_path / "nope.db").exists() and not (tmp_path / "p.html").exists()


def test_shipped_reference_is_whole_and_current():
    """The reference that ships with pebench (issue 29 item 5): eight finished runs holding every registered encoding
    on every task it applies to at both learning rates, the three-seed cells below, the second model scale (run 8,
    issue 69), the extension track (runs 9 to 25: each task's --extend and --pose runs, then the scaffold run; issue
    88) and the diagnostics run (run 26, issue 89) beside them, every ranked result ok, and every
    cell what this pebench computes, by its behavioural fingerprints (pebench.engine.fingerprint), which every result
    carries. A change that moves an encoding's probe or a task's data fails here and names the cells: rebuild them
    (studies/reference/README.md) or the page marks them stale; a change that computes the same passes."""
    from pebench.analysis.reference import REFERENCE_FILE, reference_url, stale_in
    from pebench.encodings.registry import not_applicable
    from pebench.store.database import open_db
    from pebench.store.load import load_light

    assert reference_url(None) == f"sqlite:///{REFERENCE_FILE}"
    engine = open_db(reference_url(None), create=False)
    df = load_light(engine)
    assert (df.encoding_fingerprint != "").all() and (df.task_fingerprint != "").all()
    assert stale_in(engine) == ([], 1519)
    engine.dispose()
    _the_diagnostics_run_is_whole(df)
    df = df[df.run_id != DIAGNOSTICS_RUN]
    from pebench.store.load import point_column

    point = point_column(df)
    # the extension track (issue 88, studies/extension/README.md): runs of their own, set aside from the ranking
    from pebench.analysis.findings.protocols import TRACK

    second = point.isin(["ext2x", "pose2x", "scaffold0.625"])
    track, df, point = df[second], df[~second], point[~second]
    methods = {"ext2x": {"rope", "pi", "ntk", "yarn", "llama3", "longrope", "alibi", "nope", "path", "fire"},
               "pose2x": {"rope", "yarn"}, "scaffold0.625": {"rope"}}  # fmt: skip
    cells = track.assign(point=point_column(track)).groupby(["point", "encoding", "task"])
    assert set(cells.groups) == {(p, e, t) for p, encs in methods.items() for e in encs for t in TRACK}
    lengths = cells.eval_length.nunique()  # L, F·L, 2F·L; a scaffold run at its task's quick-tier lengths
    assert (cells.seed.nunique() == 3).all() and (lengths.drop("scaffold0.625") == 3).all() and (lengths >= 3).all()
    assert set(point.unique()) == {"lr0.001", "lr0.003", "d_model256"}
    # the second scale (studies/scale2/README.md): twelve encodings on nine tasks at width 256, one seed, one rate
    wide, df = df[point == "d_model256"], df[point != "d_model256"]
    wide_encodings = {"nope", "sinusoidal", "learned", "rope", "alibi", "path", "selective", "kerple", "cope",
                      "nope_qknorm", "fire", "stick_breaking"}  # fmt: skip
    wide_tasks = {"k_back", "sort", "even_pairs", "stack_manipulation", "bucket_sort", "assoc_recall",
                  "mad_selective_copy", "lm", "template"}  # fmt: skip
    assert set(zip(wide.encoding, wide.task, strict=True)) == {(e, t) for e in wide_encodings for t in wide_tasks}
    assert set(wide.seed) == {0} and (wide.status == "ok").all() and set(wide.run_id) == {8}
    runnable = {(e, t) for e in encodings.available() for t in tasks.available()
                if not_applicable(e, tasks.build(t)) is None}  # fmt: skip
    assert set(zip(df.encoding, df.task, strict=True)) == runnable and len(runnable) > 1500
    assert (df.status == "ok").all()
    # three seeds: the core five everywhere, the randomized pair on the Chomsky tasks, and the added seeds (runs 6
    # and 7, studies/reference/README.md): the contested encodings and the randomized pair on eleven tasks
    from pebench.analysis.findings.published import CHOMSKY
    from pebench.analysis.spread import CORE_ENCODINGS as core

    randomized = {"randomized_rope", "randomized_learned"}
    chomsky = set(CHOMSKY)
    added = {"selective", "kerple", "cope", "nope_qknorm", "fire", "stick_breaking", "llama3", "yarn", "carope",
             "cable"}  # fmt: skip
    added_tasks = {"mqar_forget", "shift_invariant", "even_pairs", "parity", "modular_sum", "sort", "long_range_match",
                   "cycle_navigation", "addition", "mad_noisy_recall", "bucket_sort"}  # fmt: skip
    seeds = df.groupby(["encoding", "task"]).seed.nunique()
    assert set(seeds.unique()) == {1, 3}
    assert set(seeds[seeds == 3].index) == {
        (e, t) for e, t in runnable
        if e in core or (e in randomized and t in chomsky | added_tasks) or (e in added and t in added_tasks)
    }  # fmt: skip
    with contextlib.closing(sqlite3.connect(f"file:{REFERENCE_FILE}?mode=ro", uri=True)) as db:
        runs = 8 + 2 * len(TRACK) + 1 + 1  # the default protocol, the second scale, the track's, the diagnostics run
        assert db.execute("select status from runs order by id").fetchall() == [("finished",)] * runs
        assert db.execute("select distinct json_extract(config, '$.model.d_model') from results "
                          "where point = 'd_model256'").fetchall() == [(256,)]  # fmt: skip
        assert json.loads(db.execute("select options from runs where id = 8").fetchone()[0])["sweep"] == ["d_model=256"]


DIAGNOSTICS_RUN = 26
DIAGNOSED_ENCODINGS = {"nope", "sinusoidal", "learned", "rope", "alibi", "ssmax_nope", "path", "selective", "kerple",
                       "cope", "fire", "stick_breaking"}  # fmt: skip
DIAGNOSED_TASKS = {"k_back", "lm", "copy", "reverse", "sort", "assoc_recall", "modular_sum", "add_nocarry"}


def _the_diagnostics_run_is_whole(df: pd.DataFrame) -> None:
    """The shipped reference's diagnostics run (issue 89, studies/diagnostics/run.sh): marked as one, twelve encodings
    (the core five, the leaders, ssmax_nope) on eight tasks, seed 0, one rate, every result ok and carrying every
    diagnostic at every length (the logit range null for PaTH alone, whose kernel has scores of its own)."""
    from pebench.analysis.page_data import diagnostics_run
    from pebench.analysis.reference import REFERENCE_FILE
    from pebench.engine.diagnostics import DIAGNOSTICS

    with contextlib.closing(sqlite3.connect(f"file:{REFERENCE_FILE}?mode=ro", uri=True)) as db:
        options = {rid: json.loads(o or "{}") for rid, o in db.execute("select id, options from runs")}
        metrics = [(e, json.loads(m)) for e, m in db.execute("select encoding, metrics from results where run_id = ?",
                                                              (DIAGNOSTICS_RUN,))]  # fmt: skip
    assert {rid for rid, o in options.items() if diagnostics_run(o)} == {DIAGNOSTICS_RUN}
    run = df[df.run_id == DIAGNOSTICS_RUN]
    assert set(zip(run.encoding, run.task, strict=True)) == {(e, t) for e in DIAGNOSED_ENCODINGS
                                                             for t in DIAGNOSED_TASKS}  # fmt: skip
    assert set(run.seed) == {0} and (run.status == "ok").all()
    assert (run.groupby(["encoding", "task"]).eval_length.nunique() >= 3).all()
    assert len(metrics) == len(run)
    for encoding, m in metrics:
        missing = {name for name in DIAGNOSTICS if m.get(name) is None}
        assert missing == ({"logit_range", "logit_range_ratio"} if encoding == "path" else set()), (encoding, missing)
