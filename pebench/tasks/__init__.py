"""Tasks. Each task lives in its own module; importing it registers it.

Adding a task: write ``pebench/tasks/<name>.py`` with a :class:`Task` subclass decorated with :func:`register`, and
add the module to the import list below (the registry entry).
"""

from pebench.tasks import (  # noqa: F401  (registry entries)
    add_nocarry,
    assoc_recall,
    binary_addition,
    bucket_sort,
    copy_string,
    cycle_navigation,
    duplicate_string,
    k_back,
    lm,
    long_range_match,
    modular_arithmetic,
    modular_sum,
    needle,
    parity,
    passkey,
    reverse_string,
    shift_invariant,
    sort_items,
    template,
)
from pebench.tasks.base import IGNORE, TIERS, Batch, Task
from pebench.tasks.registry import available, build, get, register

__all__ = ["IGNORE", "TIERS", "Batch", "Task", "available", "build", "get", "register"]
