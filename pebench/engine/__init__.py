"""The training engine: what turns a case into a trained, evaluated model.

:mod:`~pebench.engine.settings` (the knobs and their flags) -> :mod:`~pebench.engine.runner` (describes a case, finds
or trains its model, evaluates it into a record) -> :mod:`~pebench.engine.training` (the one loop, one model or K
packed seeds through :mod:`~pebench.engine.packing`, stopped by :mod:`~pebench.engine.stopping`) ->
:mod:`~pebench.engine.evaluation` (scores at every length); :mod:`~pebench.engine.checkpoints` keeps trained models,
:mod:`~pebench.engine.device` picks the device and precision. Nothing is imported here, so importing one module
does not pull in the others.
"""
