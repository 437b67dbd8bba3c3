"""Before any training: how many models a run trains and about how long it takes (issue 71 item 5).

**Models**: the distinct (sweep point, encoding, task, seed) of the selected cases that run (an encoding that does
not apply to a task is skipped, not trained). Those whose checkpoint is already in the cache directory load instead
of training. Results that ``--reuse`` copies from the database are not subtracted: that lookup happens per case as
it runs.

**Time**: a model's cost is the sharding's estimate in tokens processed (:func:`pebench.suite.sharding.case_costs`:
3 x steps x batch x training tokens, plus its evaluations). This machine's rate, in those tokens per second, is
measured by timing real training steps -- :class:`pebench.engine.training.SingleStep` on the task's own batches,
after one warm-up step, with the threads a worker will have -- of one encoding ``e0`` (the one on most tasks) on each
task, and of each other encoding on one task it shares with ``e0`` (its anchor ``a``):

    rate(e, t) = rate(e0, t) x rate(e, a) / rate(e0, a)

so the calibration trains E + T models for a few steps, not E x T (a pair without such an anchor is measured
itself). The estimate is the sum of cost / rate over the models to train, divided by the workers (``-n``), or the
longest (encoding, task) when that is more. It is an upper bound for ``--stop learned|plateau``, which end models
early. ``--collect-only`` prints it and trains nothing.

A pair's rate, once timed, is kept for later runs on this machine (:func:`remembered_rate`: keyed by the pair's
training configuration, the device, the threads, the CPU, torch and pebench's source) in ``step_rates.json`` beside
the fingerprints (:func:`pebench.engine.fingerprint.cache_file`; ``PEBENCH_FINGERPRINT_CACHE=off`` keeps nothing), so
the calibration of the whole quick tier (79 pairs at the default model, about 28 s on a 2-core CPU) runs once, not at
every start. Delete that file to time again, for instance after timing on a loaded machine.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from pebench.case import Case
from pebench.engine import fingerprint
from pebench.engine.machine_cache import read_through
from pebench.engine.runner import Runner
from pebench.engine.training import SingleStep, training_batch
from pebench.hashing import config_hash
from pebench.suite.sharding import case_costs

TIMED_STEPS = 2
"""Training steps timed per calibrated (encoding, task), after one warm-up step."""


@dataclass(frozen=True)
class Estimate:
    """What a run trains and how long that should take here."""

    models: int
    cached: int
    seconds: float
    workers: int
    calibrated: int
    """(encoding, task) pairs whose training steps were timed now."""
    calibration_s: float
    remembered: int = 0
    """(encoding, task) pairs whose rate was timed by an earlier run on this machine (:func:`remembered_rate`)."""

    def line(self) -> str:
        """One line for the terminal, before any training."""
        train = self.models - self.cached
        cached = f" ({self.cached} more load from the cache)" if self.cached else ""
        if train == 0:
            return f"pebench: nothing to train: all {self.models} models load from the cache"
        return (f"pebench: {train} model{'s' if train != 1 else ''} to train{cached}, about {duration(self.seconds)} "
                f"with {self.workers} worker{'s' if self.workers != 1 else ''} on this machine ({self._timing()}; "
                "pebench.suite.estimate)")  # fmt: skip

    def _timing(self) -> str:
        now = f"training steps of {self.calibrated} (encoding, task) pairs timed in {self.calibration_s:.1f} s"
        earlier = f"{self.remembered} pairs timed by an earlier run here"
        return now if not self.remembered else earlier if not self.calibrated else f"{now}, {earlier}"


def duration(seconds: float) -> str:
    """``75`` -> ``"1 min"``, ``5400`` -> ``"1 h 30 min"``."""
    minutes = max(1, round(seconds / 60))
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} min"


@contextmanager
def worker_threads(workers: int) -> Iterator[None]:
    """Torch's threads as a worker of ``workers`` will have them (:func:`pebench.suite.plugin._share_cores`)."""
    before = torch.get_num_threads()
    if not os.environ.get("OMP_NUM_THREADS"):
        torch.set_num_threads(max(1, before // workers))
    try:
        yield
    finally:
        torch.set_num_threads(before)


def step_rate(runner: Runner, case: Case) -> float:
    """Tokens processed per second (the cost formula's units) of ``case``'s model training on its task's batches."""
    models, device = runner.models(case.point), runner.device
    task = models.task(case.task)
    model = models.build_model(case).to(device).train()
    cfg = models.settings.train_config(task)
    stepper = SingleStep(model, cfg)
    gen, pos = torch.Generator().manual_seed(0), torch.Generator().manual_seed(0)
    batches = [training_batch(task, model, cfg.batch_size, gen, pos, device) for _ in range(TIMED_STEPS + 1)]
    stepper.step(batches[:1], [pos], cfg, device)  # warm-up
    start = time.perf_counter()
    for batch in batches[1:]:
        stepper.step([batch], [pos], cfg, device)
    per_step = (time.perf_counter() - start) / TIMED_STEPS
    return 3.0 * cfg.batch_size * task.tokens(task.train_range[1]) / per_step


def rates_file() -> Path | None:
    """Where the timed rates are kept (beside the fingerprints); None when that cache is off."""
    path = fingerprint.cache_file()
    return None if path is None else path.with_name("step_rates.json")


def rate_key(runner: Runner, case: Case) -> str:
    """What ``case``'s rate depends on: its trained model's configuration (any seed), the device, torch's threads,
    the CPU, torch, pebench's source and the timing's own steps."""
    return config_hash({"model": runner.models(case.point).model_key(replace(case, seed=0)),
                        "device": runner.device.type, "threads": torch.get_num_threads(),
                        "cpu": fingerprint.machine().split(";")[0], "torch": torch.__version__,
                        "source": fingerprint.package_source(), "timed_steps": TIMED_STEPS})  # fmt: skip


def remembered_rate(runner: Runner, case: Case, timed_now: list[Case]) -> float:
    """:func:`step_rate` of ``case``, from an earlier run on this machine when one timed it (:func:`rates_file`),
    else timed now (and appended to ``timed_now``) and kept."""

    def time_it() -> float:
        timed_now.append(case)
        return step_rate(runner, case)

    return float(read_through(rates_file(), rate_key(runner, case), time_it))


def pair_rates(examples: dict[tuple[str, str], Case], rate: Callable[[Case], float]
               ) -> tuple[dict[tuple[str, str], float], int]:  # fmt: skip
    """The rate of every (encoding, task) of ``examples`` (a case of each) by the factorisation of the module
    docstring from ``rate`` (a case's :func:`step_rate`), and how many pairs were asked of ``rate``."""
    measured: dict[tuple[str, str], float] = {}

    def timed(pair: tuple[str, str]) -> float:
        if pair not in measured:
            measured[pair] = rate(examples[pair])
        return measured[pair]

    encodings = sorted({e for e, _ in examples})
    tasks = sorted({t for _, t in examples})
    e0 = max(encodings, key=lambda e: (sum(1 for x, _ in examples if x == e), e == "rope", e))
    rates = {}
    for enc, task in sorted(examples):
        anchor = next((a for a in tasks if (enc, a) in examples and (e0, a) in examples), None)
        if enc == e0 or (e0, task) not in examples or anchor is None:
            rates[(enc, task)] = timed((enc, task))
        else:
            rates[(enc, task)] = timed((e0, task)) * timed((enc, anchor)) / timed((e0, anchor))
    return rates, len(measured)


def estimate(runner: Runner, cases: Iterable[Case], workers: int = 1) -> Estimate:
    """The :class:`Estimate` of training ``cases`` (the runnable selected cases) with ``workers`` processes."""
    cases = list(cases)
    models = {(c.point, c.encoding, c.task, c.seed): c for c in cases}
    cached = {m for m, c in models.items() if _checkpointed(runner, c)}
    to_train = [c for c in cases if (c.point, c.encoding, c.task, c.seed) not in cached]
    start = time.perf_counter()
    seconds: dict[tuple[str, str], float] = {}
    asked, timed_now = 0, []
    if to_train:
        examples = {(c.encoding, c.task): c for c in to_train}
        with worker_threads(workers), torch.random.fork_rng(devices=[]):  # the run's random state untouched
            rates, asked = pair_rates(examples, lambda case: remembered_rate(runner, case, timed_now))
        seconds = {pair: cost / rates[pair] for pair, cost in case_costs(runner, to_train).items()}
    total = sum(seconds.values())
    wall = max(total / max(1, workers), max(seconds.values(), default=0.0))
    return Estimate(len(models), len(cached), wall, workers, len(timed_now), time.perf_counter() - start,
                    asked - len(timed_now))  # fmt: skip


def _checkpointed(runner: Runner, case: Case) -> bool:
    models = runner.models(case.point)
    path = models.checkpoints.path(case, models.model_key(case))
    return path is not None and path.exists()


def workers_of(option: object) -> int:
    """``-n``'s value as a number of workers (``auto``/``logical``: the CPU count; absent: 1)."""
    if isinstance(option, int):
        return max(1, option)
    if isinstance(option, str):
        return int(option) if option.isdigit() else os.cpu_count() or 1
    return 1


def estimate_line(runner: Runner, cases: Iterable[Case], workers: int) -> str:
    """:meth:`Estimate.line`, or why there is none (an estimate never stops a run)."""
    try:
        return estimate(runner, cases, workers).line()
    except Exception as err:  # noqa: BLE001 -- the run goes on; its own checks name real faults
        return f"pebench: no time estimate ({type(err).__name__}: {err})"
