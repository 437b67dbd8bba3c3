"""Training and evaluation of one model: AdamW, linear warm-up then cosine decay, gradient clipping.

The optimiser follows the seed study (a published interactive Streamlit comparison of positional encodings on four
synthetic tasks, where pebench's core tasks and default model come from): AdamW with gradient clip 1.0; the schedule
is that of nanoGPT-style training (Loshchilov & Hutter 2019 for AdamW; cosine decay, Loshchilov & Hutter 2017).
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from pebench.errors import ConfigError
from pebench.models import Transformer
from pebench.stopping import StopRule
from pebench.tasks.base import IGNORE, Batch, Task

PRECISIONS = ("fp32", "bf16", "tf32")
"""``fp32``: plain float32. ``bf16``: autocast to bfloat16 (weights, optimiser state and the loss stay float32).
``tf32``: float32 storage with TensorFloat-32 matmuls where the hardware has them (NVIDIA Ampere and later)."""

@dataclass(frozen=True)
class TrainConfig:
    """Optimisation settings. ``curve_every`` 0 means about 20 learning-curve points per run. ``precision`` is one of
    :data:`PRECISIONS`; it is part of the stored configuration only when not ``fp32`` (so configurations, hashes and
    checkpoints from before the option are unchanged: no ``precision`` key means fp32). ``val_batches``: held-out
    batches per length at each learning-curve point (:class:`Validation`; 0: none); it never changes the trained
    model, so it is not part of the stored configuration or its hash. ``stop`` is one of
    :data:`pebench.stopping.STOP_RULES` (:class:`~pebench.stopping.StopRule`); stored as the rule with its thresholds
    unless ``budget``."""

    steps: int = 600
    batch_size: int = 64
    lr: float = 3e-3
    weight_decay: float = 0.01
    warmup_steps: int = 50
    grad_clip: float = 1.0
    curve_every: int = 0
    precision: str = "fp32"
    val_batches: int = 2
    stop: str = "budget"

    def __post_init__(self) -> None:
        if self.steps <= 0:
            raise ConfigError("train", f"{{steps}} must be a positive integer, got {self.steps}")
        if self.batch_size <= 0:
            raise ConfigError("train", f"{{batch_size}} must be a positive integer, got {self.batch_size}")
        if not (self.lr > 0 and math.isfinite(self.lr)):
            raise ConfigError("train", f"{{lr}} must be a positive finite number, got {self.lr}")
        if self.precision not in PRECISIONS:  # "auto" is resolved per device before (pebench.device)
            raise ConfigError("train", f"{{precision}} must be one of {', '.join(PRECISIONS)}, got {self.precision!r}")
        if self.val_batches < 0:
            raise ConfigError("train", f"{{val_batches}} must be 0 or more, got {self.val_batches}")
        StopRule(self.stop)

    @property
    def stop_rule(self) -> StopRule:
        return StopRule(self.stop)

    @property
    def curve_interval(self) -> int:
        return self.curve_every or max(1, self.steps // 20)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        del d["val_batches"]
        if d["precision"] == "fp32":
            del d["precision"]
        del d["stop"]
        if (stop := self.stop_rule.to_dict()) is not None:
            d["stop"] = stop
        return d


@contextlib.contextmanager
def precision_context(precision: str, device: torch.device) -> Iterator[None]:
    """Autocast for ``bf16``; TensorFloat-32 matmuls for ``tf32`` (restored afterwards); nothing for ``fp32``."""
    if precision == "bf16":
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
            yield
    elif precision == "tf32":
        before = torch.get_float32_matmul_precision()
        torch.set_float32_matmul_precision("high")
        try:
            yield
        finally:
            torch.set_float32_matmul_precision(before)
    else:
        yield


@dataclass
class TrainInfo:
    """What a training run produced besides the weights."""

    steps: int = 0
    wall_time_s: float = 0.0
    tokens_per_s: float = 0.0
    final_loss: float = float("nan")
    curve: list[dict[str, float]] = field(default_factory=list)
    status: str = "ok"  # ok | diverged
    message: str = ""
    packed_with: int = 1
    """How many seeds were trained together with this one (:mod:`pebench.packing`); 1: alone."""
    stop_reason: str = "budget"
    """Why training ended: one of :data:`pebench.stopping.STOP_REASONS` (``steps`` says after how many steps)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Linear warm-up to ``cfg.lr`` over ``warmup_steps``, then cosine decay to 10% of it."""
    warm = min(cfg.warmup_steps, max(cfg.steps // 10, 1))
    if step < warm:
        return cfg.lr * (step + 1) / warm
    progress = (step - warm) / max(1, cfg.steps - warm)
    return cfg.lr * (0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * progress)))


def masked_loss_and_correct(
    logits: torch.Tensor, targets: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Mean cross-entropy over scored positions, per-position correctness, and the scored mask."""
    scored = targets != IGNORE
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), targets.reshape(-1), ignore_index=IGNORE)
    correct = (logits.argmax(-1) == targets) & scored
    return loss, correct, scored


def make_optimizer(model: Transformer, cfg: TrainConfig) -> torch.optim.Optimizer:
    """AdamW with weight decay on matrices only (not on norms, biases or 1-d encoding parameters)."""
    decay = [p for p in model.parameters() if p.requires_grad and p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.requires_grad and p.dim() < 2]
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW([g for g in groups if g["params"]], lr=cfg.lr, betas=(0.9, 0.95))


def train(
    model: Transformer,
    task: Task,
    cfg: TrainConfig,
    seed: int,
    device: torch.device,
    progress: bool | None = None,
    progress_context: Callable[[], contextlib.AbstractContextManager[Any]] | None = None,
    description: str = "train",
    on_point: Callable[[TrainInfo], None] | None = None,
) -> TrainInfo:
    """Train ``model`` on ``task`` in place. A non-finite loss stops training with status "diverged".
    ``on_point(info)`` is called after each learning-curve point is appended (the model in train mode, between two
    steps); it may read the model and ``info`` but must not change them.

    Each step's forward gets the task's annotations and the positions generator, from which an encoding that reads
    annotations draws its training offsets (:meth:`~pebench.encodings.base.PositionalEncoding.embed_annotations`);
    no other encoding draws from it there, so their trajectories are unchanged."""
    from pebench.hashing import derive_seed

    model.to(device).train()
    gen = torch.Generator().manual_seed(derive_seed(seed, "train", task.name))
    pos_gen = torch.Generator().manual_seed(derive_seed(seed, "positions", task.name))
    opt = make_optimizer(model, cfg)
    info = TrainInfo()
    interval = cfg.curve_interval
    params = [p for p in model.parameters() if p.requires_grad]
    acc = StepStats(device)
    rule = cfg.stop_rule
    val = Validation.build(model, task, cfg, seed, device)
    tokens = 0
    ctx = progress_context() if progress_context is not None else contextlib.nullcontext()
    start = time.perf_counter()
    with ctx:
        bar = tqdm(range(cfg.steps), desc=description, disable=progress is False if progress is not None else None,
                   leave=False, dynamic_ncols=True)
        for step in bar:
            for group in opt.param_groups:
                group["lr"] = lr_at(step, cfg)
            model.set_step(step, cfg.steps)
            batch = training_batch(task, model, cfg.batch_size, gen, pos_gen, device)
            with precision_context(cfg.precision, device):
                logits = model(batch.inputs, batch.positions, batch.annotations, pos_gen)
            loss, correct, scored = masked_loss_and_correct(logits, batch.targets)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
            opt.step()
            tokens += batch.inputs.numel()
            acc.add(step, loss, correct, scored, grad_norm)
            info.steps = step + 1
            if (step + 1) % interval == 0 or step + 1 == cfg.steps:
                extra = val.sums(model, model, step + 1) if val is not None else None
                point, bad_step, extra_values = acc.read(step + 1, extra)
                if bad_step is not None:
                    info.status = info.stop_reason = "diverged"
                    info.message = f"non-finite training loss or gradient norm at step {bad_step}"
                    info.steps = bad_step
                    break
                if val is not None:
                    point.update(val.point(extra_values))
                info.curve.append(point)
                info.final_loss = acc.last_loss
                bar.set_postfix(loss=f"{point['loss']:.3f}", acc=f"{point['accuracy']:.3f}")
                if on_point is not None:
                    on_point(info)
                reason = rule.check(info.curve, step + 1, cfg.steps)
                if reason is not None:
                    info.stop_reason = reason
                    break
        bar.close()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    info.wall_time_s = time.perf_counter() - start
    info.tokens_per_s = tokens / info.wall_time_s if info.wall_time_s > 0 else 0.0
    model.eval()
    return info


def training_batch(task: Task, model: Transformer, batch_size: int, gen: torch.Generator, pos_gen: torch.Generator,
                   device: torch.device) -> Batch:  # fmt: skip
    """One training batch on ``device``: drawn on the CPU from the task's seeded generator (so a seed gives the same
    data on every device), positions from the encoding's :meth:`train_positions` unless the task sets them, and the
    task's annotations. On CUDA it is copied from pinned memory without blocking, so the host draws the next batch
    while the GPU computes."""
    batch = task.sample_train(batch_size, gen)
    positions = batch.positions
    if positions is None:
        positions = model.encoding.train_positions(batch_size, batch.inputs.shape[1], pos_gen)
    batch = Batch(batch.inputs, batch.targets, positions, batch.annotations)
    if device.type != "cuda":
        return batch.to(device)

    def move(t: torch.Tensor) -> torch.Tensor:
        return t.pin_memory().to(device, non_blocking=True)

    ann = None if batch.annotations is None else {k: move(v) for k, v in batch.annotations.items()}
    return Batch(move(batch.inputs), move(batch.targets), move(batch.positions), ann)  # type: ignore[arg-type]


def read_back(values: torch.Tensor) -> list[float]:
    """The training loop's only read of device values (one per learning-curve point): everything else stays on the
    device, so a GPU step never waits for the host."""
    return values.tolist()


class StepStats:
    """Loss, correct and scored tokens, steps, the last loss and the first non-finite step, accumulated on the
    device between learning-curve points (float64 where the device has it, so the sums are those of the host)."""

    def __init__(self, device: torch.device) -> None:
        dtype = torch.float32 if device.type == "mps" else torch.float64
        self.sums = torch.zeros(4, dtype=dtype, device=device)  # loss, correct, scored, steps
        self.first_bad = torch.full((), -1.0, dtype=dtype, device=device)
        self.last = torch.zeros((), dtype=dtype, device=device)
        self.last_loss = float("nan")

    def add(self, step: int, loss: torch.Tensor, correct: torch.Tensor, scored: torch.Tensor, grad_norm: torch.Tensor
            ) -> None:  # fmt: skip
        dtype = self.sums.dtype
        loss = loss.detach().to(dtype)
        self.sums += torch.stack([loss, correct.sum().to(dtype), scored.sum().to(dtype), torch.ones_like(loss)])
        bad = ~(torch.isfinite(loss) & torch.isfinite(grad_norm))
        self.first_bad = torch.where(bad & (self.first_bad < 0), torch.full_like(self.first_bad, step), self.first_bad)
        self.last = loss

    def read(self, step: int, extra: torch.Tensor | None = None) -> tuple[dict[str, float], int | None, list[float]]:
        """The curve point for the steps since the last read, the first non-finite step (None: none yet), and the
        values of ``extra`` (device values read in the same single read, e.g. :meth:`Validation.sums`)."""
        parts = [self.sums, self.first_bad[None], self.last[None]]
        if extra is not None:
            parts.append(extra.to(self.sums.dtype))
        values = read_back(torch.cat(parts))
        loss, correct, scored, n, first_bad, last = values[:6]
        self.sums.zero_()
        self.last_loss = last
        point = {"step": step, "loss": loss / max(n, 1), "accuracy": correct / max(scored, 1)}
        return point, (int(first_bad) if first_bad >= 0 else None), values[6:]


def batch_sums(logits: torch.Tensor, targets: torch.Tensor, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """Summed loss, correct and scored tokens, correct and all sequences of one evaluation batch, on the device."""
    scored = targets != IGNORE
    loss_sum = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), targets.reshape(-1), ignore_index=IGNORE,
                               reduction="sum")  # fmt: skip
    correct = (logits.argmax(-1) == targets) & scored
    seq_correct = (correct | ~scored).all(dim=1).sum()
    n_seq = torch.full_like(seq_correct, targets.shape[0])
    return torch.stack([loss_sum.to(dtype), correct.sum().to(dtype), scored.sum().to(dtype), seq_correct.to(dtype),
                        n_seq.to(dtype)])  # fmt: skip


def metric_values(loss_sum: float, n_correct: float, n_scored: float, n_seq_correct: float, n_seq: float
                  ) -> dict[str, float]:  # fmt: skip
    """:func:`evaluate`'s metrics from the sums of :func:`batch_sums`."""
    loss = loss_sum / max(n_scored, 1)
    return {"loss": loss, "token_accuracy": n_correct / max(n_scored, 1),
            "sequence_accuracy": n_seq_correct / max(n_seq, 1), "perplexity": math.exp(min(loss, 50.0))}  # fmt: skip


@dataclass(frozen=True)
class Validation:
    """The validation points of a learning curve: at each curve point, the task's metric on ``cfg.val_batches``
    held-out batches (the first evaluation split, batches of ``cfg.batch_size``) at the training length and at twice
    it (``2x`` is left out where the task cannot produce it or the model's encoding is sized for less).

    The data come from a generator seeded from (seed, "validation", task, length, step) and the positions an encoding
    draws from one seeded from (seed, "validation positions", task, length, step): the training generators are never
    touched and the model runs in eval mode without gradients, so the trained model is the same with or without
    validation, and the same seed and configuration give the same curve. The values stay on the device and are read
    with the training statistics in the curve point's one read (:meth:`StepStats.read`). Keys:
    ``val_<metric>_1x`` and ``val_<metric>_2x``, ``<metric>`` the task's (``val_accuracy_1x``, ``val_perplexity_2x``).
    """

    task: Task
    seed: int
    device: torch.device
    n_samples: int
    batch_size: int
    lengths: tuple[tuple[str, int], ...]

    @staticmethod
    def build(model: Transformer, task: Task, cfg: TrainConfig, seed: int, device: torch.device
              ) -> Validation | None:  # fmt: skip
        if cfg.val_batches <= 0:
            return None
        from pebench.errors import LengthError

        lengths = []
        for factor in (1, 2):
            length = task.train_length * factor
            try:
                task.check_length(length)
            except LengthError:
                continue
            if task.tokens(length) <= model.encoding.ctx.max_len:
                lengths.append((f"{factor}x", length))
        return Validation(task, seed, device, cfg.val_batches * cfg.batch_size, cfg.batch_size, tuple(lengths))

    @torch.no_grad()
    def sums(self, module: torch.nn.Module, forward: Callable[..., torch.Tensor], step: int,
             model: Transformer | None = None) -> torch.Tensor:  # fmt: skip
        """The :func:`batch_sums` of every length, on the device: ``forward(inputs, positions, annotations)`` gives
        the logits (annotations: the task's, None when it has none), ``module`` is put in eval mode meanwhile (then
        back in train mode), ``model`` (default ``module``) is the one whose encoding sets the evaluation length and
        draws positions."""
        from pebench.hashing import derive_seed

        model = model if model is not None else module  # type: ignore[assignment]
        task = self.task
        dtype = torch.float32 if self.device.type == "mps" else torch.float64
        out = []
        module.eval()
        try:
            for _, length in self.lengths:
                gen = torch.Generator().manual_seed(derive_seed(self.seed, "validation", task.name, length, step))
                pos_gen = torch.Generator().manual_seed(
                    derive_seed(self.seed, "validation positions", task.name, length, step))  # fmt: skip
                total = torch.zeros(5, dtype=dtype, device=self.device)
                with eval_length(model, task.train_length, length):  # type: ignore[arg-type]
                    for cpu in task.eval_batches(length, self.n_samples, gen, task.eval_splits[0], self.batch_size):
                        batch = Batch(cpu.inputs, cpu.targets, eval_positions(model, cpu, pos_gen),
                                      cpu.annotations).to(self.device)  # fmt: skip
                        logits = forward(batch.inputs, batch.positions, batch.annotations)
                        total += batch_sums(logits, batch.targets, dtype)
                out.append(total)
        finally:
            module.train()
        return torch.cat(out) if out else torch.zeros(0, dtype=dtype, device=self.device)

    def point(self, values: list[float]) -> dict[str, float]:
        """The ``val_<metric>_<factor>x`` entries of a curve point from the values :meth:`sums` gave."""
        out = {}
        for i, (factor, _) in enumerate(self.lengths):
            out[f"val_{self.task.metric}_{factor}"] = self.task.score(metric_values(*values[5 * i : 5 * i + 5]))
        return out


@contextlib.contextmanager
def eval_length(model: Transformer, train_length: int, length: int) -> Iterator[None]:
    """Tell the encoding the evaluation length for the duration of the block, then restore the training length."""
    model.encoding.configure_eval(train_length, length)
    try:
        yield
    finally:
        model.encoding.configure_eval(train_length, train_length)


def eval_positions(model: Transformer, batch: Batch, generator: torch.Generator) -> torch.Tensor | None:
    """The positions of an evaluation batch: the task's own when it sets them, else the encoding's
    (:meth:`~pebench.encodings.base.PositionalEncoding.eval_positions`, drawn from ``generator``; None: 0..T-1)."""
    if batch.positions is not None:
        return batch.positions
    return model.encoding.eval_positions(batch.inputs.shape[0], batch.inputs.shape[1], generator)


@torch.no_grad()
def evaluate(
    model: Transformer,
    task: Task,
    length: int,
    split: str,
    n_samples: int,
    seed: int,
    device: torch.device,
    batch_size: int = 64,
) -> dict[str, float]:
    """Loss, token accuracy and sequence accuracy on ``n_samples`` held-out sequences at task length ``length``.

    The batches come from :meth:`Task.eval_batches` with a generator seeded from (seed, "eval", task, length,
    split), separate from training; positions an encoding draws at evaluation (:func:`eval_positions`) come from a
    second generator seeded from (seed, "eval positions", task, length, split), so they never change the data and
    the same seed gives the same positions and metrics. Token accuracy is over scored positions; a sequence is
    correct when all its scored positions are; perplexity is exp(mean loss over scored positions).
    """
    from pebench.hashing import derive_seed

    task.check_length(length)
    model.to(device).eval()
    gen = torch.Generator().manual_seed(derive_seed(seed, "eval", task.name, length, split))
    pos_gen = torch.Generator().manual_seed(derive_seed(seed, "eval positions", task.name, length, split))
    dtype = torch.float32 if device.type == "mps" else torch.float64
    total = torch.zeros(5, dtype=dtype, device=device)
    with eval_length(model, task.train_length, length):
        for cpu_batch in task.eval_batches(length, n_samples, gen, split, batch_size):
            positions = eval_positions(model, cpu_batch, pos_gen)
            batch = Batch(cpu_batch.inputs, cpu_batch.targets, positions, cpu_batch.annotations).to(device)
            total += batch_sums(model(batch.inputs, batch.positions, batch.annotations), batch.targets, dtype)
    values = total.tolist()
    return {**metric_values(*values), "n_samples": int(values[4]), "n_scored": int(values[2])}
