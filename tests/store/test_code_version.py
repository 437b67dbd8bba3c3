"""``code_version``: the hash of the code a result was trained by (``--reuse``, stale cells). Only code counts:
docstrings and comments do not; a wrapper made for an inner encoding follows the inner encoding's code too."""

from __future__ import annotations

from pathlib import Path

from pebench import encodings, tasks
from pebench.engine import code
from pebench.engine.code import code_version, source_text

SOURCE = '''"""Module docstring."""
import math

# a comment
X = 1
"""An attribute's docstring."""


class A:
    """Class docstring."""

    def f(self, v):
        """Method docstring."""
        return math.sqrt(v) + X  # trailing comment
'''


def test_docstrings_and_comments_do_not_count_code_does(tmp_path):
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text(SOURCE)
    b.write_text(SOURCE.replace("Module docstring.", "Another text.").replace("# a comment", "# another one")
                 .replace('"""Method docstring."""', '"""Other."""\n        """A second bare string."""')
                 .replace('"""Class docstring."""\n', ""))  # fmt: skip
    assert source_text(a) == source_text(b)
    for edit in ("math.sqrt(v) + X", "math.sqrt(v) - X"), ("X = 1", "X = 2"), ("def f(self, v)", "def g(self, v)"):
        b.write_text(SOURCE.replace(*edit))
        assert source_text(b) != source_text(a), edit
    broken = tmp_path / "c.py"
    broken.write_text("def (")  # not Python: its bytes count
    assert source_text(broken) == b"def ("


def test_a_wrapper_follows_its_inner_encodings_code(monkeypatch):
    k_back = tasks.get("k_back")
    before = {n: code_version(encodings.get(n), k_back) for n in ("rope", "randomized_rope", "ssmax_rope", "alibi")}
    real = code.source_text

    def edited(path: Path) -> bytes:  # rope.py as if its code had changed
        return real(path) + b"edited" if path.name == "rope.py" else real(path)

    monkeypatch.setattr(code, "source_text", edited)
    after = {n: code_version(encodings.get(n), k_back) for n in before}
    assert [n for n in before if after[n] != before[n]] == ["rope", "randomized_rope", "ssmax_rope"]
