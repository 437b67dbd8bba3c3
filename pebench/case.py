"""A benchmark case and the one format of its id: ``{encoding}-{task}-L{length}``, with ``-s{seed}`` appended when a
run has several seeds (``rope-k_back-L64-s1``). The suite's test ids, the scheduler's model scopes, the baseline's
terminal summary and the findings' case names all build and read ids here."""

from __future__ import annotations

import re
from dataclasses import dataclass

_ID = re.compile(r"^(?P<encoding>[^-]+)-(?P<task>.+)-L(?P<length>\d+)(?:-s(?P<seed>\d+))?$")


@dataclass(frozen=True)
class Case:
    """One benchmark case: an encoding, a task, an evaluation length and a seed."""

    encoding: str
    task: str
    length: int
    seed: int = 0

    @property
    def id(self) -> str:
        """``rope-k_back-L64`` (no seed: the id stored with a result)."""
        return f"{self.model}-L{self.length}"

    @property
    def model(self) -> str:
        """``rope-k_back``: the (encoding, task) pair every length and seed of which share a configuration."""
        return f"{self.encoding}-{self.task}"

    def test_id(self, seeded: bool) -> str:
        """The id with the seed when ``seeded`` (a run of several seeds): ``rope-k_back-L64-s1``."""
        return self.with_seed(self.id, self.seed) if seeded else self.id

    def model_id(self, seeded: bool) -> str:
        """The trained model's name: ``rope-k_back``, with the seed when ``seeded`` (``rope-k_back-s1``)."""
        return self.with_seed(self.model, self.seed) if seeded else self.model

    @staticmethod
    def with_seed(name: str, seed: int) -> str:
        """``name`` with the seed suffix: ``rope-k_back-L64`` and 1 give ``rope-k_back-L64-s1``."""
        return f"{name}-s{seed}"

    @classmethod
    def parse(cls, case_id: str) -> tuple[Case, bool]:
        """The case of an id (seed 0 when it carries none) and whether it carries a seed; ValueError when
        ``case_id`` is no case id. The encoding ends at the first ``-``."""
        m = _ID.match(case_id)
        if m is None:
            raise ValueError(f"not a case id: {case_id!r}")
        seed = m["seed"]
        return cls(m["encoding"], m["task"], int(m["length"]), int(seed) if seed is not None else 0), seed is not None
