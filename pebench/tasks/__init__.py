"""Tasks. Each task lives in its own module; importing it registers it.

Adding a task: write ``pebench/tasks/<name>.py`` with a :class:`Task` subclass decorated with :func:`register`, and
add the module to the import list below (the registry entry).
"""

from pebench.tasks import (  # noqa: F401  (registry entries)
    add_nocarry,
    addition,
    assoc_recall,
    binary_addition,
    binary_multiplication,
    bucket_sort,
    compute_sqrt,
    copy_string,
    cycle_navigation,
    duplicate_string,
    even_pairs,
    k_back,
    lm,
    long_range_match,
    mad_compression,
    mad_fuzzy_recall,
    mad_memorization,
    mad_noisy_recall,
    mad_recall,
    mad_selective_copy,
    missing_duplicate_string,
    modular_arithmetic,
    modular_arithmetic_brackets,
    modular_sum,
    mqar_forget,
    needle,
    odds_first,
    parity,
    passkey,
    reverse_string,
    shift_invariant,
    solve_equation,
    sort_items,
    stack_manipulation,
    template,
)
from pebench.tasks.base import IGNORE, TIERS, Batch, Task
from pebench.tasks.registry import available, build, get, register

__all__ = ["IGNORE", "TIERS", "Batch", "Task", "available", "build", "get", "register"]
