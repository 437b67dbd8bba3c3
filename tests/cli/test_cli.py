"""``pebench list encodings``: every encoding the issues ask for, one line each with a description and its paper."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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


def test_list_encodings_as_a_module():
    env_path = str(ROOT)
    proc = subprocess.run([sys.executable, "-m", "pebench", "list", "encodings"], capture_output=True, text=True,
                          cwd=ROOT, env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "yarn" in out and "Peng et al. 2023, arXiv:2309.00071" in out
    assert "randomized_rope" in out and "Ruoss et al. 2023" in out
