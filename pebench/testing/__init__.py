"""The conformance kit: every contract property of an encoding or a task class, one line each with pass/fail and the
number measured (like scikit-learn's ``check_estimator``). ``pebench check NAME|PATH.py`` prints it; in your own
tests::

    from pebench.testing import assert_conforms

    def test_my_pe_keeps_the_contract():
        assert_conforms("my_pe.py")          # a plugin file: every class it registers
        assert_conforms(MyPE)                # or a class, registered or not; or a registered name

The properties are described in :mod:`pebench.testing.encoding` (hook shapes, causality, batch independence,
determinism, checkpoint round-trip, option errors, shift invariance for the relative families, uses position,
capabilities against the hooks overridden, step throughput against rope) and :mod:`pebench.testing.task`
(declarations, batch layout, determinism, lengths, option errors).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pebench.testing.kit import (
        FAIL,
        PASS,
        SKIP,
        Property,
        Report,
        assert_conforms,
        check,
        check_encoding,
        check_task,
    )

__all__ = ["FAIL", "PASS", "SKIP", "Property", "Report", "assert_conforms", "check", "check_encoding", "check_task"]


def __getattr__(name: str) -> Any:
    """The kit (:mod:`pebench.testing.kit`) on first use: it loads every built-in encoding and task, and torch, which
    ``pebench new`` (:mod:`pebench.testing.new`) and the command line's parser do not need."""
    if name in __all__:
        from pebench.testing import kit

        return getattr(kit, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
