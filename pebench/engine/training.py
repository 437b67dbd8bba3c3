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
from typing import Any, Protocol

import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from pebench.engine.evaluation import Validation
from pebench.engine.stopping import StopReason
from pebench.engine.train_config import TrainConfig
from pebench.models import Transformer
from pebench.status import ResultStatus
from pebench.tasks.base import IGNORE, Batch, Task


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
    status: str = ResultStatus.OK
    message: str = ""
    packed_with: int = 1
    """How many seeds were trained together with this one (:mod:`pebench.engine.packing`); 1: alone."""
    stop_reason: StopReason | None = StopReason.BUDGET
    """Why training ended (``steps`` says after how many steps); None while the training loop still trains this
    model (:attr:`running`; never stored: the loop gives every model its reason before it returns). Given as its
    value (a checkpoint's ``"budget"``), it is converted to the member."""

    def __post_init__(self) -> None:
        if self.stop_reason is not None:
            self.stop_reason = StopReason(self.stop_reason)

    @property
    def running(self) -> bool:
        """Whether the training loop still trains this model (it has not diverged, met the stop rule or reached the
        budget yet)."""
        return self.stop_reason is None

    def to_dict(self) -> dict[str, Any]:
        """Plain values (the status and the stop reason as their strings), as a checkpoint stores them."""
        reason = None if self.stop_reason is None else self.stop_reason.value
        return asdict(self) | {"status": str(self.status), "stop_reason": reason}


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


def make_optimizer(model: Transformer, cfg: TrainConfig, params: dict[str, torch.Tensor] | None = None
                   ) -> torch.optim.Optimizer:  # fmt: skip
    """AdamW with weight decay on matrices only (not on norms, biases or 1-d encoding parameters). ``params``: the
    tensors to optimise in place of the model's own trainable parameters, by name (packed seeds' stacks, whose
    group each follows the model's parameter of that name)."""
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    decay = [p if params is None else params[n] for n, p in named if p.dim() >= 2]
    no_decay = [p if params is None else params[n] for n, p in named if p.dim() < 2]
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
    draw: Draw | None = None,
    stream: str = "train",
    until: int | None = None,
) -> TrainInfo:
    """Train ``model`` on ``task`` in place (:func:`run` with one model). A non-finite loss stops training with
    status "diverged". ``on_point(info)`` is called after each learning-curve point is appended (the model in train
    mode, between two steps); it may read the model and ``info`` but must not change them.

    Each step's forward gets the task's annotations and the positions generator, from which an encoding that reads
    annotations draws its training offsets (:meth:`~pebench.encodings.base.PositionalEncoding.embed` with
    ``annotations``); no other encoding draws from it there, so their trajectories are unchanged. ``draw`` and
    ``stream``, ``until``: see :func:`run`."""
    return run(SingleStep(model, cfg), task, cfg, [seed], device, progress, progress_context, description,
               on_point, draw, stream, until)[0]  # fmt: skip


Draw = Callable[[int, torch.Generator, torch.Generator], Batch]
"""Draws a training batch of a size on the CPU from the data and positions generators (a second phase's:
:func:`pebench.engine.extension.draw`); positions left None are the encoding's training positions."""


class Stepper(Protocol):
    """One optimisation step of K models trained together: the one loop (:func:`run`) draws their batches, keeps
    their statistics, curve points, validation, stop rule and divergence; a stepper only computes. :class:`SingleStep`
    is the ordinary K = 1; :class:`pebench.engine.packing.PackedStep` stacks K seeds under ``vmap``."""

    models: list[Transformer]
    host: Transformer
    """The model whose encoding draws positions and hears the step schedule (``models[0]``)."""
    opt: torch.optim.Optimizer

    def step(self, batches: list[Batch], pos_gens: list[torch.Generator], cfg: TrainConfig, device: torch.device
             ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:  # fmt: skip
        """Forward, backward, clip and AdamW step on one batch per model: each model's loss, correct and scored
        tokens and gradient norm before clipping, ``(K,)`` each, on the device."""
        ...

    def validation(self, k: int, val: Validation | None, step: int) -> torch.Tensor:
        """Model ``k``'s :meth:`Validation.sums` on the device (empty without validation)."""
        ...

    def release(self, k: int) -> None:
        """Model ``k`` holds its weights as they are now (its training ended)."""
        ...


class SingleStep:
    """:class:`Stepper` of one model: its own forward, ``clip_grad_norm_`` and AdamW (:func:`make_optimizer`)."""

    def __init__(self, model: Transformer, cfg: TrainConfig) -> None:
        self.models = [model]
        self.host = model
        self.opt = make_optimizer(model, cfg)
        self.params = [p for p in model.parameters() if p.requires_grad]

    def step(self, batches: list[Batch], pos_gens: list[torch.Generator], cfg: TrainConfig, device: torch.device
             ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:  # fmt: skip
        (batch,) = batches
        with precision_context(cfg.precision, device):
            logits = self.host(batch.inputs, batch.positions, batch.annotations, pos_gens[0])
        loss, correct, scored = masked_loss_and_correct(logits, batch.targets)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(self.params, cfg.grad_clip)
        self.opt.step()
        return loss[None], correct.sum()[None], scored.sum()[None], norm[None]

    def validation(self, k: int, val: Validation | None, step: int) -> torch.Tensor:
        return val.sums(self.host, self.host, step) if val is not None else torch.zeros(0)

    def release(self, k: int) -> None:
        pass


def run(stepper: Stepper, task: Task, cfg: TrainConfig, seeds: list[int], device: torch.device,
        progress: bool | None = None,
        progress_context: Callable[[], contextlib.AbstractContextManager[Any]] | None = None,
        description: str = "train",
        on_point: Callable[[TrainInfo], None] | None = None, draw: Draw | None = None,
        stream: str = "train", until: int | None = None) -> list[TrainInfo]:  # fmt: skip
    """The training loop of K models (``stepper.models``, seed ``seeds[k]``'s at index k), in place: AdamW at
    :func:`lr_at`'s schedule, each seed's own data and positions generators (seeded from (seed, "train", task) and
    (seed, "positions", task)), statistics summed on the device and read once per learning-curve point, where a
    seed whose loss or gradient norm became non-finite ends ``diverged`` and one that meets the stop rule ends
    there (:class:`~pebench.engine.stopping.StopRule`); the loop ends when every seed has. A seed's wall time is its
    share (1/K) of the run's, so its tokens/s is what it cost. ``draw`` replaces the task's training batches (a
    second phase's longer or PoSE batches, :mod:`pebench.engine.extension`); ``stream`` names the generators' seeds
    (another name than ``train``: data and positions of their own, ``(seed, stream, task)`` and
    ``(seed, stream + "-positions", task)``); ``until``: stop after that many steps of ``cfg``'s schedule (a
    checkpoint part of the way through its budget, :mod:`pebench.engine.scaffold`)."""
    from pebench.hashing import derive_seed

    n = len(seeds)
    for model in stepper.models:
        model.to(device).train()
    gens = [torch.Generator().manual_seed(derive_seed(s, stream, task.name)) for s in seeds]
    pos_stream = "positions" if stream == "train" else f"{stream}-positions"
    pos_gens = [torch.Generator().manual_seed(derive_seed(s, pos_stream, task.name)) for s in seeds]
    vals = [Validation.build(stepper.host, task, cfg.val_batches, cfg.batch_size, s, device) for s in seeds]
    stats = StepStats(device, n)
    infos = [TrainInfo(stop_reason=None) for _ in seeds]  # running
    tokens = 0
    ctx = progress_context() if progress_context is not None else contextlib.nullcontext()
    start = time.perf_counter()
    with ctx:
        label = description if n == 1 else f"{description} (x{n} packed)"
        last = cfg.steps if until is None else min(until, cfg.steps)
        bar = tqdm(range(last), desc=label, disable=progress is False if progress is not None else None,
                   leave=False, dynamic_ncols=True)  # fmt: skip
        for step in bar:
            for group in stepper.opt.param_groups:
                group["lr"] = lr_at(step, cfg)
            stepper.host.set_step(step, cfg.steps)
            batches = [training_batch(task, stepper.host, cfg.batch_size, gens[k], pos_gens[k], device, draw)
                       for k in range(n)]  # fmt: skip
            stats.add(step, *stepper.step(batches, pos_gens, cfg, device))
            tokens += batches[0].inputs.numel()
            for info in infos:
                if info.running:
                    info.steps = step + 1
            point_due = (step + 1) % cfg.curve_interval == 0 or step + 1 == last
            if point_due and _curve_point(stepper, stats, vals, infos, step + 1, cfg, on_point, bar):
                break
        bar.close()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    wall = time.perf_counter() - start
    for k, (model, info) in enumerate(zip(stepper.models, infos, strict=True)):
        if info.running:  # trained to the budget
            info.stop_reason = StopReason.BUDGET
        if info.stop_reason in (StopReason.BUDGET, StopReason.DIVERGED):
            stepper.release(k)  # a seed stopped by the rule was released there
        model.eval()
        info.wall_time_s = wall / n
        info.tokens_per_s = tokens / info.wall_time_s if info.wall_time_s > 0 else 0.0
        info.packed_with = n
    return infos


def _curve_point(stepper: Stepper, stats: StepStats, vals: list[Validation | None], infos: list[TrainInfo],
                 step: int, cfg: TrainConfig, on_point: Callable[[TrainInfo], None] | None,
                 bar: Any) -> bool:  # fmt: skip
    """Append each running seed's curve point (training statistics and validation, one read), end the seeds that
    diverged or meet the stop rule; whether every seed has ended."""
    running = [k for k, info in enumerate(infos) if info.running]
    points = stats.read(step, [stepper.validation(k, vals[k], step) for k in range(len(infos))])
    for k in running:
        info, (point, bad_step, last_loss, extra) = infos[k], points[k]
        if bad_step is not None:
            info.status, info.stop_reason = ResultStatus.DIVERGED, StopReason.DIVERGED
            info.message = f"non-finite training loss or gradient norm at step {bad_step}"
            info.steps = bad_step
            continue
        if vals[k] is not None:
            point.update(vals[k].point(extra))  # type: ignore[union-attr]
        info.curve.append(point)
        info.final_loss = last_loss
        if on_point is not None:
            on_point(info)
        reason = cfg.stop_rule.check(info.curve, step, cfg.steps)
        if reason is not None:  # this seed's weights now, as alone; the others go on
            info.stop_reason = reason
            stepper.release(k)
    live = [i.curve[-1] for i in infos if i.running and i.curve]
    if live:
        bar.set_postfix(loss=f"{sum(p['loss'] for p in live) / len(live):.3f}",
                        acc=f"{sum(p['accuracy'] for p in live) / len(live):.3f}")  # fmt: skip
    return not live  # every seed has ended (a running seed has a point now)


def training_batch(task: Task, model: Transformer, batch_size: int, gen: torch.Generator, pos_gen: torch.Generator,
                   device: torch.device, draw: Draw | None = None) -> Batch:  # fmt: skip
    """One training batch on ``device``: drawn on the CPU from the task's seeded generator (so a seed gives the same
    data on every device), positions from the encoding's
    :meth:`~pebench.encodings.base.PositionalEncoding.positions` (``train=True``) unless the task sets them, and the
    task's annotations. On CUDA it is copied from pinned memory without blocking, so the host draws the next batch
    while the GPU computes."""
    batch = task.sample_train(batch_size, gen) if draw is None else draw(batch_size, gen, pos_gen)
    positions = batch.positions
    if positions is None:
        positions = model.encoding.positions(batch_size, batch.inputs.shape[1], pos_gen, train=True)
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


SeedPoint = tuple[dict[str, float], int | None, float, list[float]]
"""One model's part of :meth:`StepStats.read`: curve point, first non-finite step, last loss, extra values."""


class StepStats:
    """Loss, correct and scored tokens, steps, the last loss and the first non-finite step of each of K models,
    accumulated on the device between learning-curve points (float64 where the device has it, so the sums are those
    of the host)."""

    def __init__(self, device: torch.device, n: int = 1) -> None:
        dtype = torch.float32 if device.type == "mps" else torch.float64
        self.n = n
        self.sums = torch.zeros(n, 4, dtype=dtype, device=device)  # loss, correct, scored, steps
        self.first_bad = torch.full((n,), -1.0, dtype=dtype, device=device)
        self.last = torch.zeros(n, dtype=dtype, device=device)

    def add(self, step: int, losses: torch.Tensor, correct: torch.Tensor, scored: torch.Tensor, norms: torch.Tensor
            ) -> None:  # fmt: skip
        """One step's ``(K,)`` losses, correct and scored token counts and gradient norms."""
        dtype = self.sums.dtype
        losses = losses.detach().to(dtype)
        self.sums += torch.stack([losses, correct.to(dtype), scored.to(dtype), torch.ones_like(losses)], dim=1)
        bad = ~(torch.isfinite(losses) & torch.isfinite(norms))
        self.first_bad = torch.where(bad & (self.first_bad < 0), torch.full_like(self.first_bad, step), self.first_bad)
        self.last = losses

    def read(self, step: int, extras: list[torch.Tensor]) -> list[SeedPoint]:
        """Per model: the curve point for the steps since the last read, its first non-finite step (None: none
        yet), its last loss, and the values of its ``extras[k]`` (device values read in the same single read, e.g.
        :meth:`Validation.sums`)."""
        n = self.n
        widths = [e.numel() for e in extras]
        parts = [self.sums.flatten(), self.first_bad, self.last, *(e.to(self.sums) for e in extras)]
        values = read_back(torch.cat(parts))
        self.sums.zero_()
        out, offset = [], 6 * n
        for k in range(n):
            loss, correct, scored, count = values[4 * k : 4 * k + 4]
            first_bad = values[4 * n + k]
            point = {"step": step, "loss": loss / max(count, 1), "accuracy": correct / max(scored, 1)}
            out.append((point, int(first_bad) if first_bad >= 0 else None, values[5 * n + k],
                        values[offset : offset + widths[k]]))  # fmt: skip
            offset += widths[k]
        return out
