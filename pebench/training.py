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
from pebench.tasks.base import IGNORE, Batch, Task


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation settings. ``curve_every`` 0 means about 20 learning-curve points per run."""

    steps: int = 600
    batch_size: int = 64
    lr: float = 3e-3
    weight_decay: float = 0.01
    warmup_steps: int = 50
    grad_clip: float = 1.0
    curve_every: int = 0

    def __post_init__(self) -> None:
        if self.steps <= 0:
            raise ConfigError("train", f"{{steps}} must be a positive integer, got {self.steps}")
        if self.batch_size <= 0:
            raise ConfigError("train", f"{{batch_size}} must be a positive integer, got {self.batch_size}")
        if not (self.lr > 0 and math.isfinite(self.lr)):
            raise ConfigError("train", f"{{lr}} must be a positive finite number, got {self.lr}")

    @property
    def curve_interval(self) -> int:
        return self.curve_every or max(1, self.steps // 20)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


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
) -> TrainInfo:
    """Train ``model`` on ``task`` in place. A non-finite loss stops training with status "diverged"."""
    from pebench.hashing import derive_seed

    model.to(device).train()
    gen = torch.Generator().manual_seed(derive_seed(seed, "train", task.name))
    pos_gen = torch.Generator().manual_seed(derive_seed(seed, "positions", task.name))
    opt = make_optimizer(model, cfg)
    info = TrainInfo()
    interval = cfg.curve_interval
    acc_loss = acc_correct = acc_scored = 0.0
    acc_n = 0
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
            batch = task.sample_train(cfg.batch_size, gen)
            length = batch.inputs.shape[1]
            positions = batch.positions
            if positions is None:
                positions = model.encoding.train_positions(cfg.batch_size, length, pos_gen)
            batch = Batch(batch.inputs, batch.targets, positions).to(device)
            logits = model(batch.inputs, batch.positions)
            loss, correct, scored = masked_loss_and_correct(logits, batch.targets)
            loss_value = loss.item()
            if not math.isfinite(loss_value):
                info.status = "diverged"
                info.message = f"non-finite training loss ({loss_value}) at step {step}"
                info.steps = step
                break
            opt.zero_grad(set_to_none=True)
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
            if not torch.isfinite(grad_norm):
                info.status = "diverged"
                info.message = f"non-finite gradient norm at step {step}"
                info.steps = step
                break
            opt.step()
            tokens += batch.inputs.numel()
            acc_loss += loss_value
            acc_correct += correct.sum().item()
            acc_scored += scored.sum().item()
            acc_n += 1
            info.steps = step + 1
            if (step + 1) % interval == 0 or step + 1 == cfg.steps:
                point = {"step": step + 1, "loss": acc_loss / acc_n, "accuracy": acc_correct / max(acc_scored, 1)}
                info.curve.append(point)
                bar.set_postfix(loss=f"{point['loss']:.3f}", acc=f"{point['accuracy']:.3f}")
                acc_loss = acc_correct = acc_scored = 0.0
                acc_n = 0
            info.final_loss = loss_value
        bar.close()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    info.wall_time_s = time.perf_counter() - start
    info.tokens_per_s = tokens / info.wall_time_s if info.wall_time_s > 0 else 0.0
    model.eval()
    return info


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
    total_loss = 0.0
    n_scored = n_correct = n_seq_correct = n_seq = 0
    with eval_length(model, task.train_length, length):
        for cpu_batch in task.eval_batches(length, n_samples, gen, split, batch_size):
            cpu_batch = Batch(cpu_batch.inputs, cpu_batch.targets, eval_positions(model, cpu_batch, pos_gen))
            batch = cpu_batch.to(device)
            b = batch.inputs.shape[0]
            logits = model(batch.inputs, batch.positions)
            scored = batch.targets != IGNORE
            loss_sum = F.cross_entropy(
                logits.reshape(-1, logits.shape[-1]).float(),
                batch.targets.reshape(-1),
                ignore_index=IGNORE,
                reduction="sum",
            )
            correct = (logits.argmax(-1) == batch.targets) & scored
            total_loss += loss_sum.item()
            n_scored += int(scored.sum())
            n_correct += int(correct.sum())
            n_seq_correct += int((correct | ~scored).all(dim=1).sum())
            n_seq += b
    loss = total_loss / max(n_scored, 1)
    return {
        "loss": loss,
        "token_accuracy": n_correct / max(n_scored, 1),
        "sequence_accuracy": n_seq_correct / max(n_seq, 1),
        "perplexity": math.exp(min(loss, 50.0)),
        "n_samples": n_seq,
        "n_scored": n_scored,
    }
