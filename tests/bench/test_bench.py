"""``pebench bench --tasks``: per-task quick-tier timing with in-distribution verdicts (numbers worked by hand)."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from pebench.analysis.scoring import training_length_scores
from pebench.bench.tasks import format_task_table, resolve_names
from pebench.cli import main
from pebench.errors import PebenchError, UnknownNameError


def _row(enc: str, eval_length: int, score: float | None, status: str = "ok") -> dict:
    return {"task": "sort", "encoding": enc, "train_length": 6, "eval_length": eval_length, "score": score,
            "status": status, "chance_level": 0.25, "higher_is_better": True, "metric": "exact_match"}  # fmt: skip


def test_in_distribution_reads_the_training_length_only():
    df = pd.DataFrame([
        _row("rope", 6, 0.85), _row("rope", 12, 0.10),  # only L6 is in distribution
        _row("nope", 6, 0.30), _row("nope", 24, 0.99),
        _row("alibi", 6, None, status="diverged"),
    ])  # fmt: skip
    rows = {r["encoding"]: r for r in training_length_scores(df, "sort")}
    assert rows["rope"]["score"] == 0.85
    assert rows["rope"]["fraction"] == pytest.approx((0.85 - 0.25) / 0.75)
    assert rows["rope"]["verdict"] == "learned"
    assert rows["nope"]["fraction"] == pytest.approx(0.05 / 0.75)
    assert rows["nope"]["verdict"] == "not learned"
    assert rows["alibi"]["score"] is None and rows["alibi"]["verdict"] == "failed"
    table = format_task_table([{"task": "sort", "wall_s": 12.4, "rows": list(rows.values())}],
                              ["nope", "rope", "alibi", "learned"])  # fmt: skip
    header, line = table.splitlines()
    assert header.split() == ["task", "wall", "metric", "chance", "nope", "rope", "alibi", "learned"]
    assert line.split() == ["sort", "12s", "exact_match", "0.25", "0.3", "-", "0.85", "L", "failed", "x", "n/a"]


def test_resolve_names_checks_every_name():
    assert resolve_names("rope, alibi", "encoding") == ["rope", "alibi"]
    assert "parity" in resolve_names("all", "task")
    with pytest.raises(UnknownNameError, match="valid tasks: add_nocarry"):
        resolve_names("copy,nonesuch", "task")
    with pytest.raises(PebenchError, match="' , ' names no encoding; valid encodings: abacus, alibi, "):
        resolve_names(" , ", "encoding")
    with pytest.raises(PebenchError, match="task 'copy' is listed twice"):
        resolve_names("copy,sort,copy", "task")


@pytest.mark.slow
def test_bench_tasks_runs_the_suite_and_prints_a_row_per_task(capsys):
    code = main(["bench", "--tasks", "reverse", "--encodings", "nope,rope",
                 "--suite-args", "--steps 4 --d-model 16 --layers 1 --eval-samples 8"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    row = next(line for line in out.splitlines() if line.startswith("reverse "))
    # task, wall, metric, chance, then "score mark" for nope and rope
    m = re.fullmatch(r"reverse\s+\d+s\s+exact_match\s+\S+\s+(\S+) ([Lp-])\s+(\S+) ([Lp-])", row)
    assert m, row
    assert 0.0 <= float(m.group(1)) <= 1.0 and 0.0 <= float(m.group(3)) <= 1.0
    assert re.search(r"^total \d+ s$", out, re.M)


def test_bench_tasks_unknown_name_is_one_line(capsys):
    assert main(["bench", "--tasks", "nonesuch"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "valid tasks:" in err


@pytest.mark.parametrize("flag", ["--lr-verdicts", "--stop-verdicts", "--models-per-hour", "--out"])
def test_bench_is_the_speed_benchmark_only(flag, capsys):
    """The studies behind the defaults are scripts under studies/ (issue 67): their former options are unknown to
    ``pebench bench``, in argparse's one line, and no option of it names a file or directory to write."""
    from pebench.cli import build_parser

    with pytest.raises(SystemExit) as exit:
        main(["bench", flag, "x"])
    err = capsys.readouterr().err.strip()
    assert exit.value.code == 2 and len(err.splitlines()) == 1 and "unrecognized arguments" in err
    bench = build_parser().parse_args(["bench"])
    assert not {"out", "output", "lr_verdicts", "stop_verdicts", "models_per_hour"} & set(vars(bench))


@pytest.mark.slow
def test_bench_several_encodings_against_hf(capsys):
    pytest.importorskip("transformers")
    code = main(["bench", "--encoding", "alibi,t5", "--seq", "16", "--timed-steps", "1", "--warmup", "0",
                 "--repeats", "1", "--d-model", "16", "--layers", "1", "--heads", "2"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    for name in ("alibi", "t5", "rope"):  # rope joins as the work-normalised rate's yardstick
        assert re.search(rf"^seq 16: pebench \({name}\) / HF throughput = [\d.]+x; GFLOP/s / RoPE's = [\d.]+x "
                         rf"\(throughput / RoPE's [\d.]+x\)$", out, re.M), out  # fmt: skip
    assert re.search(r"^seq 16: pebench \(rope\) .* GFLOP/s / RoPE's = 1.00x \(throughput / RoPE's 1.00x\)$", out, re.M)
    table = {line.split()[2]: line.split() for line in out.splitlines() if line.startswith("   16  pebench")}
    assert set(table) == {"(alibi)", "(t5)", "(rope)"}


def test_the_counted_work_of_a_step_is_the_formula_of_its_products():
    """One block, SDPA attention, no biases: forward 2*N*(4 d^2 + 3 d h) per token for the projections and the MLP
    (N = batch x seq), the head 2*N*d*V, attention 2 * 2*B*T^2*d (scores and mixing, the whole square, as torch's
    counter counts it); the backward twice each product (the gradients of both factors), and attention's five
    products for the forward's two (it recomputes the scores, as a fused kernel does)."""
    import torch

    from pebench import encodings
    from pebench.bench.throughput import step_flops
    from pebench.encodings.base import EncodingContext
    from pebench.models import ModelConfig, Transformer

    cfg = ModelConfig(vocab_size=32, d_model=16, n_layers=1, n_heads=2)
    model = Transformer(cfg, encodings.build("rope", EncodingContext(16, 2, 1, 8)))
    b, t, d, v, h = 2, 8, cfg.d_model, cfg.vocab_size, cfg.hidden
    x = torch.randint(0, v, (b, t))
    n = b * t
    products, attention = 2 * n * (4 * d * d + 3 * d * h) + 2 * n * d * v, 2 * 2 * b * t * t * d
    assert step_flops(model, x, x) == 3 * products + attention * 7 // 2


def test_bench_unknown_encoding_is_one_line(capsys):
    assert main(["bench", "--encoding", "alibi,bogus", "--seq", "8"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "valid encodings:" in err


def test_the_diagnostics_share_of_a_case_is_worked_by_hand():
    """``pebench bench --diagnostics``: a case is the task's steps of training plus its three results' diagnostics."""
    from pebench.bench.diagnostics import lines

    m = {"step": 0.2, "steps": 100.0, "diag_1x": 0.1, "diag_2x": 0.2, "diag_4x": 0.5,
         "diag_1x_small_probe": 0.05, "diag_2x_small_probe": 0.1, "diag_4x_small_probe": 0.25}  # fmt: skip
    # diagnostics 0.8 s against 100 x 0.2 s of training: 0.8 / 20.8; the small probe 0.4 / 20.4
    assert lines("rope", m).split() == ["rope", "200.0", "0.50", "1.00", "2.50", "3.85%", "1.96%"]


def test_bench_diagnostics_times_a_real_model_and_names_the_valid_tasks(capsys):
    assert main(["bench", "--diagnostics", "--encoding", "alibi", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    assert "task k_back (training length 64" in out and "the probe fitted on 32" in out
    row = next(line for line in out.splitlines() if line.startswith("alibi"))
    assert float(row.split()[-2].rstrip("%")) > 0  # the figure, not a target: speed is met in the benchmark's run
    assert main(["bench", "--diagnostics", "nosuch"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("pebench: error: unknown task 'nosuch'; valid tasks: ") and "\n" not in err


@pytest.mark.parametrize(("args", "message"), [
    (["--repeats", "0"], "argument --repeats: 0 is below 1"),
    (["--timed-steps", "x"], "argument --timed-steps: 'x' is not a whole number"),
    (["--seq", "16", "0"], "argument --seq: 0 is below 1"),
    (["--warmup", "-1"], "argument --warmup: -1 is below 0"),
])  # fmt: skip
def test_bench_counts_below_their_minimum_are_one_line_errors(args, message, capsys):
    """Before, ``--repeats 0`` printed an empty table (or, with --diagnostics, a traceback)."""
    with pytest.raises(SystemExit) as exit_info:
        main(["bench", "--diagnostics", *args])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and "Traceback" not in err
