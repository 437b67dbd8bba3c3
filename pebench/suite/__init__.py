"""The suite's pytest wiring: options, parametrization and the typed suite state (:mod:`~pebench.suite.plugin`), and
the process that writes results, checks baselines and prints the summary (:mod:`~pebench.suite.writer`)."""
