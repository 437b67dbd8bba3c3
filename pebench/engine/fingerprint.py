"""Behavioural fingerprints: whether a stored result is what this pebench computes, judged by what the code computes
rather than by its source (:mod:`pebench.engine.code` keeps the source hash as provenance).

Two fingerprints make a cell's identity, each recorded with every result when it is trained:

* **The encoding's probe** (:func:`encoding_probe`): a small model (width 32, 2 heads, 2 blocks) hosting the encoding
  with the cell's options is trained by the real loop (:func:`pebench.engine.training.train`: AdamW, warm-up and
  cosine schedule, clipping, the learning-curve points with validation) for a few steps on :class:`ProbeTask`'s fixed
  data; then evaluated (:func:`pebench.engine.evaluation.evaluate`) at the training length and at 2x; its logits on a
  fixed batch at 2x, its gradient norms per parameter and the weights' checksum are read; where the encoding trains
  packed, two seeds are trained together (:func:`pebench.engine.packing.train_packed`). The values of the engine
  that are not an encoding's -- the schedule (:func:`~pebench.engine.training.lr_at`), every stop rule's decision on
  fixed curves, the metrics of fixed sums -- are part of every probe. The probe runs in float64, with ``Tensor.float()``
  keeping float64 tensors for its duration (:func:`_precision`; the process should not run other torch work on
  other threads meanwhile), so the rounding of different CPU kernels and thread counts moves it by under 2e-13
  relative while a change to what the code computes (a constant, a formula) moves it by far more; :data:`RTOL` sits
  between the two (measured: tests/data/fingerprints/, docs/reproducibility.md).
* **The task's data digest** (:func:`task_digest`): SHA-256 of its declarations (vocabulary, chance level, metric,
  splits, lengths per tier, tokens per length, grid cells), its score of fixed metrics, and its generated training
  and evaluation batches (inputs, targets, positions, annotations) at fixed seeds and every length of both tiers:
  integers, so it matches exactly or not at all.

A result is current when both match this pebench's (:func:`pebench.engine.code.stale_cells`): a refactor or a faster
kernel that computes the same numbers keeps the shipped reference current; a change to one encoding stales that
encoding's cells, one to a task generator that task's, one to the shared engine every cell.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import math
import os
import platform
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import torch

from pebench import encodings, metrics
from pebench.encodings.base import EncodingContext
from pebench.engine import shipped
from pebench.engine.evaluation import evaluate, metric_values
from pebench.engine.machine_cache import read_through
from pebench.engine.packing import packable, train_packed
from pebench.engine.stopping import STOP_RULES, StopRule
from pebench.engine.train_config import TrainConfig
from pebench.engine.training import lr_at, train
from pebench.hashing import canonical_json, derive_seed
from pebench.models import ModelConfig, Transformer
from pebench.tasks.base import ANNOTATIONS, COUPLED_POSITION, DIGIT_INDEX, IGNORE, TIERS, Batch, Task
from pebench.tasks.grid import GridEvaluated

PROBE_VERSION = "1"
"""The probe's own definition (model, data, steps, values read). Changing it changes every probe: bump it, and
stamp the results known current again (studies/fingerprints/stamp_reference.py, docs/reproducibility.md)."""

RTOL = 1e-9
"""Relative tolerance of a probe value, at the scale of its list (:func:`probe_deviation`; :data:`ATOL` for a list
of zeros): far above the spread of the same code across CPU kernels and thread counts (measured at most 1.7e-13, an
Intel Xeon against an AMD EPYC: tests/data/fingerprints/) and far below what a change of one constant moves (RoPE's
base 10000 -> 10001: 2.9e-6; tests/engine/test_fingerprint.py)."""
ATOL = 1e-12
RTOL32 = 1e-4
""":data:`RTOL` of a probe that had to run in float32 (``dtype`` 32: an encoding that casts to float32 by hand)."""

PROBE_LENGTH = 16
"""The probe task's training length; it is evaluated at this and twice it."""


class ProbeTask(Task):
    """The probe's fixed data: random tokens over 16 symbols, each target the token three places back (a task that
    needs position), carrying every annotation of :data:`pebench.tasks.base.ANNOTATIONS` (a digit index cycling
    1..4, a coupled position id ``t // 2 + 1``) so that encodings that read annotations run on it too. Defined here
    and never registered: it changes only with :data:`PROBE_VERSION`."""

    name = "fingerprint_probe"
    metric = "accuracy"
    train_length = PROBE_LENGTH
    annotations = frozenset(ANNOTATIONS)

    @property
    def vocab_size(self) -> int:
        return 16

    @property
    def chance_level(self) -> float:
        return 1 / 16

    def sample(self, batch_size: int, length: int, generator: torch.Generator, split: str = "train") -> Batch:
        inputs = torch.randint(0, 16, (batch_size, length), generator=generator)
        targets = torch.full_like(inputs, IGNORE)
        targets[:, 3:] = inputs[:, :-3]
        t = torch.arange(length).expand(batch_size, length)
        notes = {DIGIT_INDEX: (t % 4 + 1).clone(), COUPLED_POSITION: (t // 2 + 1).clone()}
        return Batch(inputs, targets, None, notes)


@contextlib.contextmanager
def _precision(dtype: torch.dtype) -> Iterator[None]:
    """``dtype`` as torch's default; for float64 also ``Tensor.float()`` keeping float64 tensors as they are: the
    model's and encodings' casts to float32 guard bf16 runs (for float32 they are no-ops), and in a float64 probe
    they would round to float32 and let the rounding of each CPU's kernels into the probe."""
    before, cast = torch.get_default_dtype(), torch.Tensor.float
    torch.set_default_dtype(dtype)
    if dtype == torch.float64:
        torch.Tensor.float = lambda self, *a, **k: self if self.dtype == torch.float64 else cast(self, *a, **k)  # type: ignore[method-assign]
    try:
        yield
    finally:
        torch.set_default_dtype(before)
        torch.Tensor.float = cast  # type: ignore[method-assign]


def _probe_model(name: str, options: Mapping[str, Any] | None, task: Task, seed: int, dtype: torch.dtype
                 ) -> Transformer:  # fmt: skip
    ctx = EncodingContext(d_model=32, n_heads=2, n_layers=2, max_len=task.max_length(), train_length=task.train_length)
    torch.manual_seed(seed)
    encoding = encodings.build(name, ctx, dict(options or {}))
    return Transformer(ModelConfig(vocab_size=task.vocab_size, d_model=32, n_layers=2, n_heads=2), encoding).to(dtype)


PROBE_TRAIN = TrainConfig(steps=6, batch_size=4, lr=1e-2, warmup_steps=2, curve_every=2, val_batches=1)
"""The probe's training: six steps in three learning-curve points, each with validation at 1x and 2x."""


def engine_values() -> dict[str, list[float]]:
    """What the engine computes for every encoding alike: the learning-rate schedule at fixed steps, each stop rule's
    decision on fixed curves (1 stops, 0 goes on), and the metrics of fixed evaluation sums."""
    cfg = TrainConfig(steps=100, warmup_steps=10)
    curves = {"flat": [{"step": 10 * i, "loss": 1.0, "accuracy": 0.5} for i in range(1, 11)],
              "learned": [{"step": 10 * i, "loss": 0.01, "accuracy": 1.0} for i in range(1, 11)],
              "falling": [{"step": 10 * i, "loss": 2.0 / i, "accuracy": 0.1 * i} for i in range(1, 11)]}  # fmt: skip
    stops = [float(StopRule(rule).check(curve[:n], 10 * n, 100) is not None)
             for rule in STOP_RULES for curve in curves.values() for n in (3, 6, 10)]  # fmt: skip
    sums = [metric_values(123.4, 37.0, 64.0, 2.0, 8.0), metric_values(0.0, 0.0, 0.0, 0.0, 0.0)]
    return {"lr": [lr_at(s, cfg) for s in (0, 1, 5, 9, 10, 11, 50, 99)], "stop": stops,
            "metrics": [m[k] for m in sums for k in sorted(m)]}  # fmt: skip


def encoding_probe(name: str, options: Mapping[str, Any] | None = None, dtype: torch.dtype = torch.float64
                   ) -> dict[str, list[float]]:  # fmt: skip
    """The behavioural probe of encoding ``name`` with ``options`` (see the module docstring): named lists of
    floats, deterministic on one machine, equal within :data:`RTOL` across machines for the same computation.
    ``dtype``: float64, the stored probe; float32 shows that a change keeps the bits of the runs' own precision."""
    task = ProbeTask()
    device = torch.device("cpu")
    out: dict[str, list[float]] = {"engine." + k: v for k, v in engine_values().items()}
    with _precision(dtype), torch.random.fork_rng(devices=[]):
        model = _probe_model(name, options, task, 0, dtype)
        info = train(model, task, PROBE_TRAIN, seed=0, device=device, progress=False)
        out["curve"] = [float(p[k]) for p in info.curve for k in sorted(p) if k != "step"]
        for length in (PROBE_LENGTH, 2 * PROBE_LENGTH):
            result = evaluate(model, task, length, "test", 8, 0, device, batch_size=4)
            out[f"eval_{length}"] = [result["loss"], result["token_accuracy"]]
        batch = task.sample(2, 2 * PROBE_LENGTH, torch.Generator().manual_seed(derive_seed("fingerprint", "batch")))
        model.train()
        logits = model(batch.inputs, None, batch.annotations)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch.targets.reshape(-1),
                                                 ignore_index=IGNORE)  # fmt: skip
        model.zero_grad()
        loss.backward()
        flat = logits.detach().flatten()
        out["logits"] = [float(loss.detach()), float(flat.mean()), float(flat.pow(2).mean().sqrt()),
                         float(flat.abs().max())]  # fmt: skip
        named = sorted((n, p) for n, p in model.named_parameters() if p.grad is not None)
        out["grad_norms"] = [float(p.grad.norm()) for _, p in named]  # type: ignore[union-attr]
        out["weights"] = [float(sum((p.detach() ** 2).sum() for _, p in named))]
        model.eval()
        if packable(model):
            models = [_probe_model(name, options, task, s, dtype) for s in (0, 1)]
            infos = train_packed(models, task, PROBE_TRAIN, [0, 1], device, progress=False)
            out["packed"] = [float(p["loss"]) for i in infos for p in i.curve]
    return out


def probe_digest(values: Mapping[str, list[float]], name: str = "", options: Mapping[str, Any] | None = None) -> str:
    """The key a probe is stored under: SHA-256 of the encoding's name, options and the probe's exact values (the
    same probe of the same encoding shares one stored row)."""
    given = {"v": PROBE_VERSION, "name": name, "options": dict(options or {}), "values": dict(values)}
    return hashlib.sha256(canonical_json(given).encode()).hexdigest()[:32]


def probe_deviation(a: Mapping[str, list[float]], b: Mapping[str, list[float]]) -> float:
    """How far probe ``a`` is from ``b``: the largest ``|x - y| / (ATOL + RTOL * s)`` over their values, ``s`` the
    largest magnitude in the value's list (a gradient norm near zero is compared at the scale of the largest, where
    its rounding noise lives) (<= 1: the same computation); ``inf`` when their names or lengths differ or a value is
    non-finite in one only."""
    if set(a) != set(b) or any(len(a[k]) != len(b[k]) for k in a):
        return math.inf
    worst, rtol = 0.0, RTOL32 if "dtype" in a else RTOL
    for key in a:
        pairs = [(x, y) for x, y in zip(a[key], b[key], strict=True) if not (x == y or math.isnan(x) and math.isnan(y))]
        if any(not (math.isfinite(x) and math.isfinite(y)) for x, y in pairs):
            return math.inf
        scale = max((max(abs(x), abs(y)) for x, y in zip(a[key], b[key], strict=True)), default=0.0)
        for x, y in pairs:
            worst = max(worst, abs(x - y) / (ATOL + rtol * scale))
    return worst


def same_probe(a: Mapping[str, list[float]], b: Mapping[str, list[float]]) -> bool:
    """Whether two probes are the same computation (:func:`probe_deviation` <= 1)."""
    return probe_deviation(a, b) <= 1.0


def _feed(h: Any, tensor: torch.Tensor | None) -> None:
    if tensor is None:
        h.update(b"-")
        return
    h.update(f"{tensor.dtype}{tuple(tensor.shape)}".encode())
    h.update(tensor.detach().cpu().contiguous().numpy().tobytes())


def _feed_batch(h: Any, batch: Batch) -> None:
    for t in (batch.inputs, batch.targets, batch.positions):
        _feed(h, t)
    for key in sorted(batch.annotations or {}):
        h.update(key.encode())
        _feed(h, batch.annotations[key])  # type: ignore[index]


def _num(x: float | None) -> str:
    return "none" if x is None else f"{x:.12g}"


def task_digest(task: Task, samples: int = 2) -> str:
    """The data digest of ``task`` as built (see the module docstring): exact; ``samples`` sequences per batch, two
    training batches of seeds 0 and 1 and a batch of every evaluation split at every length of both tiers (seed 0)."""
    h = hashlib.sha256()
    lengths = sorted({n for tier in TIERS for n in task.eval_lengths(tier)})
    fixed = metric_values(37.5, 20.0, 40.0, 3.0, 8.0)
    declared = {"config": task.config(), "vocab": task.vocab_size, "chance": _num(task.chance_level),
                "metric": task.metric, "higher": task.higher_is_better, "splits": list(task.eval_splits),
                "range": list(task.train_range), "tiers": {t: task.eval_lengths(t) for t in TIERS},
                "tokens": [task.tokens(n) for n in lengths], "max": task.max_length(),
                "annotations": sorted(task.annotations), "steps": task.default_steps, "min": task.min_length,
                "score": _num(task.score(fixed)),
                "normalised": _num(metrics.get(task.metric).normalise(task.score(fixed), task.chance_level)),
                "grid": [sorted(map(str, task.grid_cells(n).items())) for n in lengths]
                if isinstance(task, GridEvaluated) else None}  # fmt: skip
    h.update(canonical_json({"v": PROBE_VERSION, **declared}).encode())
    for seed in (0, 1):
        gen = torch.Generator().manual_seed(derive_seed(seed, "train", task.name))
        for _ in range(2):
            _feed_batch(h, task.sample_train(samples, gen))
    for split in task.eval_splits:
        for length in lengths:
            gen = torch.Generator().manual_seed(derive_seed(0, "eval", task.name, length, split))
            _feed_batch(h, next(iter(task.eval_batches(length, samples, gen, split, samples))))
    return h.hexdigest()[:32]


def machine() -> str:
    """The machine a probe was computed on, as recorded beside it: CPU model, torch's CPU capability, threads."""
    from pebench.engine.device import cpu_description

    return f"{cpu_description()}; torch {torch.__version__}; {torch.get_num_threads()} threads; {platform.machine()}"


_PROBES: dict[tuple[Any, ...], dict[str, Any]] = {}
_TASKS: dict[tuple[Any, ...], dict[str, Any]] = {}
CACHE_ENV = "PEBENCH_FINGERPRINT_CACHE"
"""The on-disk cache of fingerprints: a JSON file (default ``~/.cache/pebench/fingerprints.json``, or under
``$XDG_CACHE_HOME``); ``off`` switches it off."""


def cache_file() -> Path | None:
    """Where computed fingerprints are kept between processes (:data:`CACHE_ENV`); None when switched off."""
    given = os.environ.get(CACHE_ENV, "")
    if given == "off":
        return None
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return Path(given) if given else base / "pebench" / "fingerprints.json"


@functools.lru_cache(maxsize=1)
def package_source() -> str:
    """SHA-256 of every source file of the installed pebench: a cached fingerprint is used only by the same source."""
    h = hashlib.sha256()
    root = Path(__file__).resolve().parents[1]
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def _cache_key(kind: str, cls: type, config: str) -> str:
    """The identity of a fingerprint computed here: its kind, class, configuration, the probe's version, pebench's
    and the plugin's source, torch and the CPU. The same key is the same computation, so its values can be reused."""
    from pebench.plugins import external_files

    plugin = [p.read_bytes().hex() for p in external_files(cls)]
    given = [kind, cls.__module__, cls.__qualname__, config, PROBE_VERSION, package_source(), plugin,
             torch.__version__, machine().split(";")[0]]  # fmt: skip
    return hashlib.sha256(canonical_json(given).encode()).hexdigest()


def references(options: Mapping[str, Any]) -> tuple[type, ...]:
    """The encodings named by string values of ``options`` (DroPE's ``base``): their code runs in the probe too."""
    named = []
    for value in options.values():
        if isinstance(value, str):
            with contextlib.suppress(Exception):
                named.append(encodings.get(value))
    return tuple(named)


def _cached(kind: str, cls: type, config: str, compute: Any, refs: tuple[type, ...] = ()) -> dict[str, Any]:
    """The fingerprint row of ``(kind, cls, config)``: the one pebench ships when it was computed from the source
    installed now (:func:`pebench.engine.shipped.lookup`), else from the disk cache, else ``compute()``d and kept
    there."""
    row = shipped.lookup(kind, cls, config, PROBE_VERSION, refs)
    if row is not None:
        return row
    return read_through(cache_file(), _cache_key(kind, cls, config), compute)


def encoding_fingerprint(name: str, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """This pebench's fingerprint row of encoding ``name`` with (resolved) ``options``: digest, kind, name, options,
    values (the probe) and machine; computed once per source, machine and torch (:func:`cache_file`). An encoding
    that cannot run in float64 (a plugin casting to float32 by hand) is probed in float32, marked ``dtype`` 32 and
    compared at :data:`RTOL32`."""
    opts = dict(options or {})
    cls = encodings.get(name)
    key = (name, cls, canonical_json(opts))

    def compute() -> dict[str, Any]:
        try:
            values = encoding_probe(name, opts)
        except RuntimeError:
            values = encoding_probe(name, opts, torch.float32) | {"dtype": [32.0]}
        return {"digest": probe_digest(values, name, opts), "kind": "encoding", "name": name, "options": opts,
                "values": values, "machine": machine()}  # fmt: skip

    if key not in _PROBES:
        _PROBES[key] = _cached("encoding", cls, f"{name}:{key[2]}", compute, references(opts))
    return _PROBES[key]


def task_fingerprint(task: Task) -> dict[str, Any]:
    """This pebench's fingerprint row of ``task`` as built (:func:`task_digest`), once per source, machine and torch
    (:func:`cache_file`)."""
    key = (type(task), canonical_json(task.config()))

    def compute() -> dict[str, Any]:
        return {"digest": task_digest(task), "kind": "task", "name": task.name, "options": dict(task.opts),
                "values": {}, "machine": machine()}  # fmt: skip

    if key not in _TASKS:
        _TASKS[key] = _cached("task", type(task), key[1], compute)
    return _TASKS[key]
