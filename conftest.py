"""Root conftest: the benchmark suite's options and hooks come from suite/conftest.py (pebench.pytest_plugin);
the unit tests in tests/ use pytest's own ``pytester`` to run the suite in a subprocess."""

pytest_plugins = ["pytester"]
