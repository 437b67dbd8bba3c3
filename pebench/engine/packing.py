"""Packed seeds: the K seeds of one (encoding, task, configuration) trained together as one batched model.

Each seed's model is built exactly as it is alone (``torch.manual_seed(seed)``, then the encoding and the
transformer), so it starts from the same weights; its parameters are then stacked along a new leading dimension and
the host model runs once per step over all K under :func:`torch.func.vmap` (:func:`torch.func.functional_call` with
the stacked parameters, ``randomness="different"``). Every seed keeps its own data stream (its training and position
generators, seeded as in :func:`pebench.engine.training.train`), its own loss, its own gradient-norm clip and its own
AdamW state, so its parameters follow the same trajectory as when trained alone, up to float rounding: AdamW is
element-wise, the losses are summed (each seed's gradient is that of its own loss), and the clip is computed per seed.

Encoding hooks with Python-side state keep working because they run on the host model: the step schedule
(:meth:`~pebench.encodings.base.PositionalEncoding.on_step`, e.g. DroPE) is the same for every seed, and random
training positions are drawn per seed from its own generator before the batched call. An encoding whose forward
cannot run under ``vmap`` says so with :attr:`~pebench.encodings.base.PositionalEncoding.packable` = False and its
seeds are trained one by one (:func:`packable`). So are those of an encoding that reads task annotations
(:attr:`~pebench.encodings.base.PositionalEncoding.needs`: Abacus, position coupling): its
:meth:`~pebench.encodings.base.PositionalEncoding.embed` (with annotations) draws its training offsets inside the
forward pass from the seed's own positions generator, and one vmapped forward for K seeds has no per-seed generator to
give it; a packed seed would then not follow its trajectory alone. The task's annotations are therefore not passed to
the packed training forward (no packed encoding reads them); validation passes them as evaluation does.

A seed whose loss or gradient norm becomes non-finite is recorded as ``diverged`` (at the next curve point, as
alone); its slice of the stack goes on without affecting the others, whose gradients never mix with it. A seed that
meets the stop rule (:class:`~pebench.engine.training.StopRule`) at a curve point has its weights copied out there, as
its training alone would end there; its slice goes on with the others (never read again), and the run ends when every
seed has stopped.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import torch
from torch.func import functional_call, vmap

from pebench.engine.evaluation import Validation
from pebench.engine.train_config import TrainConfig
from pebench.engine.training import (
    TrainInfo,
    make_optimizer,
    masked_loss_and_correct,
    precision_context,
    run,
)
from pebench.models import Transformer
from pebench.tasks.base import IGNORE, Batch, Task


def packable(model: Transformer) -> bool:
    """Whether ``model``'s encoding can be trained packed: its forward runs under ``torch.func.vmap`` and it reads no
    task annotations (see the module docstring)."""
    return bool(model.encoding.packable) and not model.encoding.needs


def _stack_positions(positions: list[torch.Tensor]) -> tuple[torch.Tensor, int | None]:
    """The K seeds' positions as one shared tensor (in_dims None) when they are equal, else stacked (in_dims 0)."""
    first = positions[0]
    if all(p.shape == first.shape and torch.equal(p, first) for p in positions[1:]):
        return first, None
    if any(p.dim() == 2 for p in positions):
        batch = max(p.shape[0] for p in positions if p.dim() == 2)
        positions = [p if p.dim() == 2 else p.expand(batch, -1) for p in positions]
    return torch.stack(positions), 0


def pad_batch(batch: Batch, width: int) -> Batch:
    """``batch`` right-padded to ``width`` tokens, so that seeds whose batches came out of different widths (a task
    that pads each batch to its longest sample) stack: token 0 as input, :data:`~pebench.tasks.base.IGNORE` as
    target, the last position repeated (always a valid index of a position table), annotations 0. A causal model's
    outputs at the real tokens never see the tokens after them and padding is never scored, so each seed's loss and
    gradient are those of its unpadded batch (up to float rounding of the wider matmuls)."""
    extra = width - batch.inputs.shape[1]
    if extra == 0:
        return batch

    def right(t: torch.Tensor, value: torch.Tensor | int) -> torch.Tensor:
        fill = value.expand(*t.shape[:-1], extra) if isinstance(value, torch.Tensor) else t.new_full(
            (*t.shape[:-1], extra), value)  # fmt: skip
        return torch.cat([t, fill], dim=-1)

    positions = None if batch.positions is None else right(batch.positions, batch.positions[..., -1:])
    ann = None if batch.annotations is None else {k: right(v, 0) for k, v in batch.annotations.items()}
    return Batch(right(batch.inputs, 0), right(batch.targets, IGNORE), positions, ann)


def clip_per_seed(grads: list[torch.Tensor], max_norm: float) -> torch.Tensor:
    """Clip each seed's gradient (slice k of every stacked gradient) to global norm ``max_norm`` as
    :func:`torch.nn.utils.clip_grad_norm_` does for one model; returns the K norms before clipping."""
    k = grads[0].shape[0]
    norms = torch.stack([torch.linalg.vector_norm(g.reshape(k, -1), 2, dim=1) for g in grads], dim=1)
    total = torch.linalg.vector_norm(norms, 2, dim=1)
    coef = torch.clamp(max_norm / (total + 1e-6), max=1.0)
    for g in grads:
        g.mul_(coef.view(-1, *([1] * (g.dim() - 1))))
    return total


class PackedStep:
    """:class:`~pebench.engine.training.Stepper` of K seeds packed into one batched model (see the module docstring):
    the parameters stacked along a new leading dimension, one AdamW over the stacks (the same groups and betas as
    :func:`~pebench.engine.training.make_optimizer`, element-wise, so per seed as alone), the host model run once per
    step under ``vmap`` and each seed's gradient clipped on its own (:func:`clip_per_seed`)."""

    def __init__(self, models: list[Transformer], cfg: TrainConfig) -> None:
        self.models = models
        self.host = host = models[0]
        self.names = [name for name, p in host.named_parameters() if p.requires_grad]
        each = [dict(m.named_parameters()) for m in models]
        self.stacked = {name: torch.stack([e[name].detach() for e in each]).requires_grad_() for name in self.names}
        buffers = [dict(m.named_buffers()) for m in models]
        self.varying = {name: torch.stack([b[name] for b in buffers]) for name, buf in buffers[0].items()
                        if not all(torch.equal(buf, b[name]) for b in buffers[1:])}  # fmt: skip
        self.opt = make_optimizer(host, cfg, params=self.stacked)

    def _one_seed(self, params: dict[str, torch.Tensor], buffers: dict[str, torch.Tensor], inputs: torch.Tensor,
                  targets: torch.Tensor, positions: torch.Tensor) -> tuple[torch.Tensor, ...]:  # fmt: skip
        logits = functional_call(self.host, {**params, **buffers}, (inputs, positions))
        loss, correct, scored = masked_loss_and_correct(logits, targets)
        return loss, correct.sum(), scored.sum()

    def step(self, batches: list[Batch], pos_gens: list[torch.Generator], cfg: TrainConfig, device: torch.device
             ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:  # fmt: skip
        width = max(b.inputs.shape[1] for b in batches)
        batches = [pad_batch(b, width) for b in batches]
        positions, pos_dim = _stack_positions([b.positions for b in batches])  # type: ignore[misc]
        inputs = torch.stack([b.inputs for b in batches])
        targets = torch.stack([b.targets for b in batches])
        batched = vmap(self._one_seed, in_dims=(0, 0, 0, 0, pos_dim), randomness="different")
        with precision_context(cfg.precision, device):
            losses, correct, scored = batched(self.stacked, self.varying, inputs, targets, positions)
        self.opt.zero_grad(set_to_none=True)
        losses.sum().backward()
        norms = clip_per_seed([p.grad for p in self.stacked.values() if p.grad is not None], cfg.grad_clip)
        self.opt.step()
        return losses, correct, scored, norms

    def validation(self, k: int, val: Validation | None, step: int) -> torch.Tensor:
        """Seed ``k``'s :meth:`~pebench.engine.evaluation.Validation.sums`: its slice of the stacked parameters and
        buffers run through the host model."""
        if val is None:
            return torch.zeros(0)
        own = {name: p[k].detach() for name, p in self.stacked.items()} | {n: b[k] for n, b in self.varying.items()}

        def forward(inputs: torch.Tensor, positions: torch.Tensor | None, annotations: Any = None) -> torch.Tensor:
            return functional_call(self.host, own, (inputs, positions, annotations))

        return val.sums(self.host, forward, step)

    @torch.no_grad()
    def release(self, k: int) -> None:
        """Copy seed ``k``'s slice of the stacked parameters into its own model."""
        params = dict(self.models[k].named_parameters())
        for name in self.names:
            params[name].copy_(self.stacked[name][k])


def train_packed(
    models: list[Transformer],
    task: Task,
    cfg: TrainConfig,
    seeds: list[int],
    device: torch.device,
    progress: bool | None = None,
    progress_context: Callable[[], contextlib.AbstractContextManager[Any]] | None = None,
    description: str = "train",
) -> list[TrainInfo]:
    """Train ``models`` (seed ``seeds[k]``'s model at index k, each freshly built) on ``task`` together, in place:
    the one training loop (:func:`pebench.engine.training.run`) with a :class:`PackedStep`. Returns one
    :class:`~pebench.engine.training.TrainInfo` per seed; a seed's wall time is its share (1/K) of the packed run's, so
    its tokens/s is what it cost."""
    if len(models) != len(seeds) or not models:
        raise ValueError("train_packed needs one model per seed")
    for model in models:
        model.to(device).train()
    return run(PackedStep(models, cfg), task, cfg, seeds, device, progress, progress_context, description)
