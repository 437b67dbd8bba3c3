"""``pytest suite --shard I/N``: a deterministic part of the selected cases, split by model and balanced by cost.

A model here is an (encoding, task) pair: all its lengths and seeds go to the same shard, so no model is trained in
two shards. Each model's expected cost is estimated from what the run will do, in tokens processed:

    cost = seeds x (3 x steps x batch_size x tokens(train max) + sum over its selected lengths L of
           eval_samples x tokens(L) x evaluations at L)

(a training step is a forward and a backward pass, about 3 forwards; the evaluations at L are the task's evaluation
splits and its grid cells at L, :func:`pebench.tasks.grid.evaluations_at`). Models are assigned greedily, the most
costly first, each to the shard with the least cost so far (ties: the lower shard; the longest-processing-time rule),
so the N shards of the same selection are disjoint, cover every case, and have nearly equal cost. The split depends only
on the selection and the settings, so N CI runners or a Slurm array (``--shard $SLURM_ARRAY_TASK_ID/N``) that run
the same command agree on it. Cases collected as skipped because their encoding does not apply to their task (it
needs task annotations the task lacks) cost nothing: they are left out of the balance and shard 1 reports them.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass

from pebench.case import Case
from pebench.engine.runner import Runner
from pebench.errors import PebenchError
from pebench.tasks.grid import evaluations_at

_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


@dataclass(frozen=True)
class Shard:
    index: int
    """1-based."""
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    """``"2/3"`` -> Shard(2, 3); anything else is a one-line error."""
    m = _SHARD.match(text or "")
    if not m or not 1 <= int(m[1]) <= int(m[2]):
        raise PebenchError(f"--shard {text!r} is not valid; expected I/N with 1 <= I <= N, e.g. --shard 2/3")
    return Shard(int(m[1]), int(m[2]))


def assign(costs: dict[tuple[str, str], float], count: int) -> dict[tuple[str, str], int]:
    """Model -> shard (1-based), the most costly model first, each to the least-loaded shard."""
    load = [0.0] * count
    out = {}
    for model, cost in sorted(costs.items(), key=lambda kv: (-kv[1], kv[0])):
        i = min(range(count), key=lambda k: (load[k], k))
        out[model] = i + 1
        load[i] += cost
    return out


def model_costs(cases: Iterable[tuple[str, str, int, Hashable]],
                cost: Callable[[str, int, Hashable], tuple[float, float]]) -> dict[tuple[str, str], float]:  # fmt: skip
    """Cost per (encoding, task) of ``cases`` (encoding, task, length, seed: the seed, or anything that tells the
    models of one (encoding, task) apart); ``cost(task, length, seed)`` gives (training cost of the model, evaluation
    cost of the length)."""
    train: dict[tuple[str, str, Hashable], float] = {}
    total: dict[tuple[str, str], float] = defaultdict(float)
    for enc, task, length, seed in cases:
        train_cost, eval_cost = cost(task, length, seed)
        if (enc, task, seed) not in train:
            train[(enc, task, seed)] = train_cost
            total[(enc, task)] += train_cost
        total[(enc, task)] += eval_cost
    return dict(total)


def case_costs(runner: Runner, cases: Iterable[Case]) -> dict[tuple[str, str], float]:
    """The expected cost of each model (encoding, task) of ``cases`` with the settings of ``runner`` at each case's
    sweep point, by the formula of the module docstring (all points of an (encoding, task) go to one shard)."""

    def cost(task_name: str, length: int, model: Hashable) -> tuple[float, float]:
        point, _ = model  # type: ignore[misc]
        s, task = runner.models(point).settings, runner.task(task_name, point)
        train = 3.0 * s.train_config(task).steps * s.batch_size * task.tokens(task.train_range[1])
        return train, float(s.eval_samples * task.tokens(length) * evaluations_at(task, length))

    return model_costs(((c.encoding, c.task, c.length, (c.point, c.seed)) for c in cases), cost)
