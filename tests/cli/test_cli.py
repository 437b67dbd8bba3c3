"""The ``pebench`` command: ``list encodings`` (every encoding, one line each with a description and its paper) and
the flags it shares with the suite."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pebench import encodings
from pebench.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXPECTED = {
    # core
    "nope", "sinusoidal", "learned", "rope", "alibi",
    # from the studies
    "sinonly", "binary", "binary_norm", "decimal", "decimal_norm", "sininit", "lrope", "yarn", "pi", "ntk", "pope",
    "drope",
    # from the literature
    "t5", "kerple", "fire", "xpos", "cope", "randomized_rope", "randomized_learned",
    # the field in 2026 (issue 15)
    "p_rope", "partial_rope", "llama3", "longrope", "nope_qknorm", "rope_nope",
    # the newest (issue 32)
    "irope", "ssmax_rope", "ssmax_nope",
}  # fmt: skip


def test_list_encodings_prints_every_encoding_with_description_and_paper(capsys):
    assert main(["list", "encodings"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    names = [line.split()[0] for line in lines]
    assert names == encodings.available()
    assert set(names) >= EXPECTED
    for line, name in zip(lines, names, strict=True):
        cls = encodings.get(name)
        assert cls.description and cls.paper, name
        assert cls.description in line and f"[{cls.paper}]" in line


@pytest.mark.slow
def test_list_encodings_as_a_module():
    env_path = str(ROOT)
    proc = subprocess.run([sys.executable, "-m", "pebench", "list", "encodings"], capture_output=True, text=True,
                          cwd=ROOT, env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "yarn" in out and "Peng et al. 2023, arXiv:2309.00071" in out
    assert "randomized_rope" in out and "Ruoss et al. 2023" in out


@pytest.mark.slow
def test_flags_shared_by_the_suite_and_the_cli_are_declared_once():
    from pebench.cli import build_parser
    from pebench.engine.settings import FLAGS, Settings
    from pebench.metrics import Tolerances

    compare = build_parser().parse_args(["compare", "1", "2"])
    assert (compare.tolerance, compare.ppl_tolerance) == (Tolerances().accuracy, Tolerances().perplexity)
    assert compare.db is None  # resolved by pebench.store.database.resolve_url, as in the suite
    bench = build_parser().parse_args(["bench"])
    assert (bench.d_model, bench.n_layers, bench.n_heads, bench.batch_size) == (
        Settings.d_model, Settings.n_layers, Settings.n_heads, Settings.batch_size)
    cmd = [sys.executable, "-m", "pytest", str(ROOT / "suite"), "--help", "-p", "no:cacheprovider"]
    suite_help = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120).stdout
    for dest in ("db", "d_model", "tolerance", "ppl_tolerance", "lr"):
        assert FLAGS[dest].flag in suite_help, dest
    assert "default 0.02" in suite_help and f"default {Settings.lr:g}" in suite_help
