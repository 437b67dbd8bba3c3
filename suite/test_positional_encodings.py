"""The benchmark's cases in this repository (``pytest suite``). The test itself ships in the package,
:mod:`pebench.suite.test_positional_encodings`, so an installed pebench runs the same cases from any directory
(``pytest --pyargs pebench.suite``, ``pebench run``); ``suite/conftest.py`` wires in the plugin here."""

from pebench.suite.test_positional_encodings import test_case  # noqa: F401  (collected here as before)
