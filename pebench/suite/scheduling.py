"""Scheduling the suite on pytest-xdist workers by model, so each model is trained by one worker.

A case id is ``{encoding}-{task}-L{length}`` (``-s{seed}`` with several seeds); every length of one (encoding, task,
seed) shares one trained model. :class:`ModelScheduling` is xdist's scope scheduler with the model as the scope: all
cases of a model go to the same worker, which trains it once and evaluates every length from memory. The suite
installs it for ``-n N`` with the ``load`` (default) or ``loadgroup`` distribution (``pytest_xdist_make_scheduler``),
so grouping does not depend on xdist's ``xdist_group`` marks, which pytest 9.2 no longer honours (xdist tags a group
by rewriting ``item._nodeid``, while pytest 9.2 builds ``nodeid`` from ``item._id``).

Independently of the scheduler, a model with a checkpoint directory is trained under a file lock beside its
checkpoint (:meth:`pebench.engine.cache.ModelCache.model_for`), so a second process that needs the same model waits and
loads it.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from xdist.scheduler import LoadScopeScheduling

from pebench.case import Case
from pebench.suite.state import STATE

_PARAM = re.compile(r"\[([^\[\]]+)\]$")

DISTRIBUTIONS = ("load", "loadgroup")
"""xdist distributions the suite replaces by model scheduling."""


def model_of(nodeid: str, seeds_together: bool = False, names: Collection[str] = ()) -> str:
    """The model a suite case belongs to (``rope-k_back`` or ``rope-k_back-s1``, ``rope-k_back-layers4`` at a point
    of the sweep axes ``names``; with ``seeds_together``, as when seeds are packed into one batched model, every
    seed's case belongs to ``rope-k_back``); other nodeids are their own."""
    base = nodeid.rsplit("@", 1)[0] if nodeid.rfind("@") > nodeid.rfind("]") else nodeid
    m = _PARAM.search(base)
    try:
        case, seeded = Case.parse(m[1] if m else "", names)
    except ValueError:
        return nodeid
    return case.model_id(seeded and not seeds_together)


class ModelScheduling(LoadScopeScheduling):
    """xdist's scope scheduling with one scope per model (see the module docstring)."""

    def _split_scope(self, nodeid: str) -> str:
        state = self.config.stash[STATE]
        return model_of(nodeid, state.settings.pack_seeds > 1, state.runner.sweep.names)

    def schedule(self) -> None:
        """Before the first cases go out: the models to train and the time they should take, from the workers'
        collection (:mod:`pebench.suite.estimate`)."""
        if self.collection is None and self.collection_is_completed:
            try:
                self._say_estimate(list(next(iter(self.registered_collections.values()), [])))
            except Exception as err:  # noqa: BLE001 -- an estimate never stops a run
                self.log(f"no time estimate: {err}")
        super().schedule()

    def _say_estimate(self, nodeids: list[str]) -> None:
        from pebench.suite.estimate import estimate_line

        state = self.config.stash[STATE]
        cases = []
        for nodeid in nodeids:
            m = _PARAM.search(nodeid)
            try:
                case, _ = Case.parse(m[1] if m else "", state.runner.sweep.names)
            except ValueError:
                continue
            if state.runner.not_applicable(case.encoding, case.task) is None:
                cases.append(case)
        if cases:
            line = estimate_line(state.runner, cases, len(self.nodes))
            self.config.pluginmanager.get_plugin("terminalreporter").write_line(line)
