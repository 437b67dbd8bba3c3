"""Tasks. Each task lives in its own module; importing it registers it.

Adding a task: write ``pebench/tasks/<name>.py`` with a :class:`Task` subclass decorated with :func:`register`, and
add the module to the import list below (the registry entry).
"""

from pebench.tasks import k_back, long_range_match, modular_sum, shift_invariant  # noqa: F401  (registry entries)
from pebench.tasks.base import IGNORE, TIERS, Batch, Task
from pebench.tasks.registry import available, build, get, register

__all__ = ["IGNORE", "TIERS", "Batch", "Task", "available", "build", "get", "register"]
