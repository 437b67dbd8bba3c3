"""``python studies/lr_sweep/verdicts.py`` (issue 30, item 4): each cell at the shared rate against the rate its
in-distribution validation chose; the verdicts, the winners and the cost of both sides."""

from __future__ import annotations

import pandas as pd
import pytest
from study_scripts import load

from pebench.analysis import noise
from pebench.errors import PebenchError

lr_verdicts = load("studies/lr_sweep/verdicts.py")
main = lr_verdicts.main


def _df(scores: dict[tuple[str, str, int, int], float]) -> pd.DataFrame:
    """Results of (encoding, lr point, seed, eval length) -> accuracy on a task with chance 0; ids in order."""
    rows = []
    for i, ((enc, point, seed, length), score) in enumerate(scores.items()):
        rows.append({"id": i, "case_id": f"{enc}-k_back-L{length}-{point}-s{seed}", "point": point,
                     "axes": [["lr", point.removeprefix("lr")]], "encoding": enc,
                     "task": "no_such_task_for_spread", "train_length": 64, "eval_length": length, "seed": seed,
                     "status": "ok", "score": score, "metric": "accuracy", "higher_is_better": True,
                     "chance_level": 0.0, "config": {"model": {"vocab_size": 10}}, "metrics": {},
                     "train_time_s": 60.0 if length == 64 else 0.0})  # fmt: skip
    return pd.DataFrame(rows)


def test_each_cell_is_compared_at_the_shared_rate_and_at_the_rate_validation_chose():
    scores = {}
    for seed in range(3):
        # rope fails at 3e-3 and learns at 1e-2; alibi learns at 3e-3 and is worse at 1e-2 in distribution, but
        # 1e-2 would win at the OOD length 256: the choice must not look there
        scores |= {("rope", "lr0.003", seed, 64): 0.05, ("rope", "lr0.003", seed, 256): 0.02,
                   ("rope", "lr0.01", seed, 64): 0.98 + 0.01 * seed, ("rope", "lr0.01", seed, 256): 0.30,
                   ("alibi", "lr0.003", seed, 64): 0.85 + 0.01 * seed, ("alibi", "lr0.003", seed, 256): 0.50,
                   ("alibi", "lr0.01", seed, 64): 0.60, ("alibi", "lr0.01", seed, 256): 0.90}  # fmt: skip
    df = _df(scores)
    # the final validation at the training length follows the ID scores; the OOD rows' ids never count
    validation = {int(r.id): float(r.score) for r in df.itertuples() if r.eval_length == 64}
    validation |= {int(r.id): 1.0 - float(r.score) for r in df.itertuples() if r.eval_length == 256}
    (t,) = lr_verdicts.sides(df, validation)
    assert t.rates == {"rope": {0: "0.01", 1: "0.01", 2: "0.01"}, "alibi": {0: "0.003", 1: "0.003",
                                                                           2: "0.003"}}  # fmt: skip
    assert t.time_one == 6 * 60 and t.time_all == 12 * 60  # one model per cell and seed, against every rate
    one_v, one_w = noise.cell_verdicts(t.one, 64, t.sigma)
    best_v, best_w = noise.cell_verdicts(t.best, 64, t.sigma)
    assert one_v == {"alibi": "learned", "rope": "not learned"} and best_v == {"alibi": "learned", "rope": "learned"}
    assert one_w == {64: "alibi", 256: "alibi"} and best_w == {64: "rope", 256: "alibi"}
    text = lr_verdicts.table([t])
    assert "| no_such_task_for_spread | 3 | alibi learned, rope not learned -> **learned** |" in text
    assert "alibi 0.003 0.003 0.003, rope 0.01 0.01 0.01" in text and "64: alibi -> **rope**, 256: alibi" in text
    assert "1 of 2 cells keep their verdict and 1 of 2 columns their marked winner" in text
    assert "Rates chosen: 0.003 3, 0.01 3" in text and "(2.0x)" in text
    assert "Changed: rope on no_such_task_for_spread (not learned -> learned)." in text
    # one rate for every encoding: 1e-2 leaves alibi learned (0.60) and rope learned, 3e-3 fails rope
    assert "Every encoding at one rate, cells with their best-rate verdict: 0.003 1 of 2, 0.01 2 of 2." in text
    assert "Missed at 0.003: rope on no_such_task_for_spread (not learned -> learned)." in text
    assert "Missed at 0.01" not in text
    # a cell whose results have no validation curve (a part saved without them): no rate chosen, said, left out of
    # every count rather than counted as a changed verdict
    no_curve = {k: v for k, v in validation.items() if not df.loc[k, "case_id"].startswith("rope")}
    (t,) = lr_verdicts.sides(df, no_curve)
    text = lr_verdicts.table([t])
    assert "rope not learned -> no rate chosen" in text and "1 of 1 cells keep their verdict" in text
    assert "No rate chosen, left out of every count: rope on no_such_task_for_spread" in text
    assert "Changed" not in text and "0.003 1 of 1, 0.01 1 of 1." in text  # alibi only, learned at both


def test_halving_is_compared_with_the_full_sweep_on_the_cells_both_ran():
    scores = {}
    for seed in range(2):
        scores |= {("rope", "lr0.003", seed, 64): 0.05, ("rope", "lr0.01", seed, 64): 0.95,
                   ("alibi", "lr0.003", seed, 64): 0.90, ("alibi", "lr0.01", seed, 64): 0.40}  # fmt: skip
    df = _df(scores)
    (t,) = lr_verdicts.sides(df, {int(r.id): float(r.score) for r in df.itertuples()})
    # halving ran seed 0 of both encodings, every rate short but the one it chose; it took 3e-3 for rope, where the
    # full sweep took 1e-2 (a short run can validate better early), and agreed on alibi
    rows = []
    for i, (enc, point, chosen, score) in enumerate([("rope", "lr0.003", True, 0.05), ("rope", "lr0.01", False, 0.3),
                                                     ("alibi", "lr0.003", True, 0.90),
                                                     ("alibi", "lr0.01", False, 0.2)]):  # fmt: skip
        rows.append({"id": 100 + i, "case_id": f"{enc}-k_back-L64-{point}-s0", "point": point,
                     "axes": [["lr", point.removeprefix("lr")]], "encoding": enc,
                     "task": "no_such_task_for_spread", "train_length": 64, "eval_length": 64, "seed": 0,
                     "status": "ok", "score": score, "metric": "accuracy", "higher_is_better": True,
                     "chance_level": 0.0, "config": {"model": {"vocab_size": 10}, "train": {"steps": 600}},
                     "metrics": {"lr_halving": "chosen" if chosen else "short run of 300 of 600 steps"},
                     "train_time_s": 1.0})  # fmt: skip
    (h,) = lr_verdicts.halving_sides(pd.DataFrame(rows))
    assert h.rates == {"rope": {0: "0.003"}, "alibi": {0: "0.003"}}
    assert (h.steps, h.steps_full) == (2 * (2 * 300 + 600), 2 * 2 * 600)  # two cells: k * ceil(B / k) + B vs k * B
    (line,) = lr_verdicts.halving_lines([t], [h])
    assert "on 2 (encoding, task, seed) of the sweep: it chose the full sweep's rate in 1 of 2" in line
    assert "(not: rope on no_such_task_for_spread seed 0 (0.003 for 0.01))" in line
    assert "at its choice 1 of 2 cells have the full sweep's best-rate verdict" in line
    assert "(not: rope on no_such_task_for_spread (learned -> not learned))" in line and "(1.00)" in line
    assert lr_verdicts.halving_lines([t], []) == []


def test_a_sweep_without_the_shared_rate_is_one_line():
    df = _df({("rope", "lr0.001", 0, 64): 0.5, ("rope", "lr0.01", 0, 64): 0.6})
    with pytest.raises(PebenchError, match="no result at the shared rate 0.003 .points: lr0.001, lr0.01"):
        lr_verdicts.sides(df, {0: 0.5, 1: 0.6})
    # a sweep still running: the task is said and skipped, the other tasks are compared
    done = _df({("rope", "lr0.003", 0, 64): 0.5, ("rope", "lr0.01", 0, 64): 0.6}).assign(task="k_back", id=[7, 8])
    done["case_id"] = done["case_id"].str.replace("k_back", "copy")  # another task's cases
    left_out: list[str] = []
    (t,) = lr_verdicts.sides(pd.concat([df, done]), {0: 0.5, 1: 0.6, 7: 0.5, 8: 0.6}, left_out=left_out)
    assert t.task == "k_back" and t.rates == {"rope": {0: "0.01"}}
    assert left_out == ["no_such_task_for_spread: no result at the shared rate 0.003 (points: lr0.001, lr0.01)"]


def test_the_command_reads_a_real_lr_sweep_run(run_suite, tiny, tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'r.db'}"
    proc = run_suite("--encoding", "rope,alibi", "--task", "k_back", "-k", "L64 or L128", *tiny, "--steps", "4",
                     "--no-cache", "--db", url, "--lr-sweep", "1e-3,3e-3")  # fmt: skip
    assert proc.returncode == 0, proc.output
    assert main([str(tmp_path / "r.db")]) == 0
    out = capsys.readouterr().out
    assert "| k_back | 1 | alibi " in out and "rope " in out and "of 2 cells keep their verdict" in out
    assert "of 2 columns their marked winner" in out  # lengths 64 and 128
    # --lr-halving on the same cells, in its own database: compared with the full sweep, at 2 of its 3 steps
    run_suite(
        "--encoding",
        "rope,alibi",
        "--task",
        "k_back",
        "-k",
        "L64 or L128",
        *tiny,
        "--steps",
        "4",
        "--no-cache",
        "--db",
        f"sqlite:///{tmp_path / 'h.db'}",
        "--lr-sweep",
        "1e-3,3e-3",
        "--lr-halving",
    )
    assert main([f"{tmp_path / 'r.db'},{tmp_path / 'h.db'}"]) == 0
    out = capsys.readouterr().out
    assert "`--lr-halving` on 2 (encoding, task, seed) of the sweep: it chose the full sweep's rate in" in out
    assert "Training steps: 16 against the full sweep's 16 (1.00)" in out  # 2 cells x (2 x 2 + 4) vs 2 x 2 x 4
    # a database without an --lr-sweep run: one line
    run_suite("--encoding", "rope", "--task", "k_back", "-k", "L64", *tiny, "--steps", "4", "--no-cache",
              "--db", f"sqlite:///{tmp_path / 'plain.db'}")  # fmt: skip
    assert main([str(tmp_path / "plain.db")]) == 2
    assert "holds no --lr-sweep run" in capsys.readouterr().err


PLANTED = "S3cretPlanted"


@pytest.mark.parametrize(
    "url",
    [f"postgresql+psycopg://pebench:{PLANTED}@127.0.0.1:1/none", f"postgresql://pebench:{PLANTED}@127.0.0.1:1/none"],
    ids=["no-server", "no-driver"],
)
def test_an_error_shows_the_url_without_its_password(tmp_path, capfd, monkeypatch, url):
    """A database that cannot be opened (no server; SQLAlchemy's default PostgreSQL driver, not installed): one
    line naming it without its password, as every pebench command (tests/cli/test_secrets.py), and nothing written."""
    monkeypatch.chdir(tmp_path)
    assert main([url]) == 2
    out, err = capfd.readouterr()
    printed = out + err
    assert PLANTED not in printed and "pebench:***@127.0.0.1:1/none" in printed, printed
    assert len(printed.strip().splitlines()) == 1, printed  # one line, no traceback
    assert not list(tmp_path.iterdir())
