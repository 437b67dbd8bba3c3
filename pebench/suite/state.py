"""The suite session's typed state: what it decided before collection, held in the pytest config's stash under
:data:`STATE` and handed to the parts that act on it (the database opener, the result writer, the run summary, the
scheduler). The settings, the seed plan (``--seeds``, parsed once) and the packed seeds (``--pack``, on the
settings) are read from here, never again from the raw options."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from pebench.analysis.baseline import Baseline
from pebench.engine.runner import Runner
from pebench.engine.settings import Settings
from pebench.metrics import Tolerances
from pebench.suite.adaptive import AdaptiveSeeds, SeedPlan
from pebench.suite.sharding import Shard


@dataclass
class SuiteState:
    """Validated settings, the selected names, the one runner of this process, the database URL, the tolerances, the
    baseline (None without ``--baseline``), the shard, the seed plan and, with ``--seeds auto``, the adaptive seeds."""

    settings: Settings
    encodings: list[str]
    tasks: list[str]
    runner: Runner
    db_url: str
    tolerances: Tolerances
    baseline: Baseline | None = None
    shard: Shard | None = None
    shard_models: list[tuple[str, str]] = field(default_factory=list)
    seeds: SeedPlan = field(default_factory=SeedPlan)
    adaptive: AdaptiveSeeds | None = None
    executor_summary: str = ""
    reference: str | None = None
    """``--with-reference``: the database of reference results the ``--report`` page puts the run beside."""

    @property
    def several_seeds(self) -> bool:
        """Whether case ids carry a seed suffix (``--seeds`` more than 1, or auto)."""
        return self.seeds.count > 1


STATE = pytest.StashKey[SuiteState]()
ONE_RATE_BECAUSE = pytest.StashKey["str | None"]()
"""What made a suite run use one learning rate without ``--lr-sweep off`` (said in its closing summary)."""
GIVEN_FLAGS = pytest.StashKey["set[str]"]()
"""The suite's flags the command gives (:func:`pebench.engine.settings.given_flags`), read before their values are
converted."""
