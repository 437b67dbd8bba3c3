"""The training engine: what turns a case into a trained, evaluated model.

:mod:`~pebench.engine.settings` (the knobs and their flags) -> :mod:`~pebench.engine.runner` (runs a case into a record:
its identity, pure functions of the settings and the case, from :mod:`~pebench.engine.identity`; its trained model from
:mod:`~pebench.engine.cache`, in memory, from a checkpoint or trained now; its scores from
:func:`~pebench.engine.evaluation.evaluate_case`) -> :mod:`~pebench.engine.training` (the one loop, one model or K
packed seeds through :mod:`~pebench.engine.packing`, stopped by :mod:`~pebench.engine.stopping`) ->
:mod:`~pebench.engine.evaluation` (scores at every length); :mod:`~pebench.engine.checkpoints` keeps trained models,
:mod:`~pebench.engine.device` picks the device and precision. Nothing is imported here, so importing one module
does not pull in the others.
"""
