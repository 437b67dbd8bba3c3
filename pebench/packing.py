"""Packed seeds: the K seeds of one (encoding, task, configuration) trained together as one batched model.

Each seed's model is built exactly as it is alone (``torch.manual_seed(seed)``, then the encoding and the
transformer), so it starts from the same weights; its parameters are then stacked along a new leading dimension and
the host model runs once per step over all K under :func:`torch.func.vmap` (:func:`torch.func.functional_call` with
the stacked parameters, ``randomness="different"``). Every seed keeps its own data stream (its training and position
generators, seeded as in :func:`pebench.training.train`), its own loss, its own gradient-norm clip and its own AdamW
state, so its parameters follow the same trajectory as when trained alone, up to float rounding: AdamW is
element-wise, the losses are summed (each seed's gradient is that of its own loss), and the clip is computed per seed.

Encoding hooks with Python-side state keep working because they run on the host model: the step schedule
(:meth:`~pebench.encodings.base.PositionalEncoding.on_step`, e.g. DroPE) is the same for every seed, and random
training positions are drawn per seed from its own generator before the batched call. An encoding whose forward
cannot run under ``vmap`` says so with :attr:`~pebench.encodings.base.PositionalEncoding.packable` = False and its
seeds are trained one by one (:func:`packable`). So are those of an encoding that reads task annotations
(:attr:`~pebench.encodings.base.PositionalEncoding.needs`: Abacus, position coupling): its
:meth:`~pebench.encodings.base.PositionalEncoding.embed_annotations` draws its training offsets inside the forward
pass from the seed's own positions generator, and one vmapped forward for K seeds has no per-seed generator to give
it; a packed seed would then not follow its trajectory alone. The task's annotations are therefore not passed to
the packed training forward (no packed encoding reads them); validation passes them as evaluation does.

A seed whose loss or gradient norm becomes non-finite is recorded as ``diverged`` (at the next curve point, as
alone); its slice of the stack goes on without affecting the others, whose gradients never mix with it. A seed that
meets the stop rule (:class:`~pebench.training.StopRule`) at a curve point has its weights copied out there, as its
training alone would end there; its slice goes on with the others (never read again), and the run ends when every
seed has stopped.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from typing import Any

import torch
from torch.func import functional_call, vmap
from tqdm.auto import tqdm

from pebench.models import Transformer
from pebench.tasks.base import Task
from pebench.training import (
    TrainConfig,
    TrainInfo,
    Validation,
    lr_at,
    masked_loss_and_correct,
    precision_context,
    read_back,
    training_batch,
)


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


@torch.no_grad()
def _copy_seed(model: Transformer, stacked: dict[str, torch.Tensor], names: list[str], k: int) -> None:
    """Copy seed ``k``'s slice of the stacked parameters into its own ``model``."""
    params = dict(model.named_parameters())
    for name in names:
        params[name].copy_(stacked[name][k])


def validation_sums(host: Transformer, val: Validation | None, stacked: dict[str, torch.Tensor],
                    varying: dict[str, torch.Tensor], k: int, step: int) -> torch.Tensor:  # fmt: skip
    """Seed ``k``'s :meth:`~pebench.training.Validation.sums` (its slice of the stacked parameters and buffers run
    through the host model), on the device; nothing without validation."""
    if val is None:
        return torch.zeros(0, device=next(iter(stacked.values())).device)
    own = {name: p[k].detach() for name, p in stacked.items()} | {name: b[k] for name, b in varying.items()}

    def forward(inputs: torch.Tensor, positions: torch.Tensor | None, annotations: Any = None) -> torch.Tensor:
        return functional_call(host, own, (inputs, positions, annotations))

    return val.sums(host, forward, step)


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
    """Train ``models`` (seed ``seeds[k]``'s model at index k, each freshly built) on ``task`` together, in place.

    Returns one :class:`~pebench.training.TrainInfo` per seed; a seed's wall time is its share (1/K) of the packed
    run's, so its tokens/s is what it cost."""
    from pebench.hashing import derive_seed

    if len(models) != len(seeds) or not models:
        raise ValueError("train_packed needs one model per seed")
    n = len(models)
    for model in models:
        model.to(device).train()
    host = models[0]
    names = [name for name, p in host.named_parameters() if p.requires_grad]
    each = [dict(m.named_parameters()) for m in models]
    stacked = {name: torch.stack([e[name].detach() for e in each]).requires_grad_() for name in names}
    host_buffers = dict(host.named_buffers())
    varying = {name: torch.stack([dict(m.named_buffers())[name] for m in models])
               for name, buf in host_buffers.items()
               if not all(torch.equal(buf, dict(m.named_buffers())[name]) for m in models[1:])}  # fmt: skip
    decay = [stacked[name] for name in names if each[0][name].dim() >= 2]
    no_decay = [stacked[name] for name in names if each[0][name].dim() < 2]
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    opt = torch.optim.AdamW([g for g in groups if g["params"]], lr=cfg.lr, betas=(0.9, 0.95))
    gens = [torch.Generator().manual_seed(derive_seed(s, "train", task.name)) for s in seeds]
    pos_gens = [torch.Generator().manual_seed(derive_seed(s, "positions", task.name)) for s in seeds]

    def one_seed(params: dict[str, torch.Tensor], buffers: dict[str, torch.Tensor], inputs: torch.Tensor,
                 targets: torch.Tensor, positions: torch.Tensor) -> tuple[torch.Tensor, ...]:  # fmt: skip
        logits = functional_call(host, {**params, **buffers}, (inputs, positions))
        loss, correct, scored = masked_loss_and_correct(logits, targets)
        return loss, correct.sum(), scored.sum()

    dtype = torch.float32 if device.type == "mps" else torch.float64
    sums = torch.zeros(n, 4, dtype=dtype, device=device)  # loss, correct, scored, steps per seed
    first_bad = torch.full((n,), -1.0, dtype=dtype, device=device)
    last = torch.zeros(n, dtype=dtype, device=device)
    infos = [TrainInfo() for _ in seeds]
    done = [False] * n
    stopped = [False] * n  # stopped by the stop rule: its weights were copied out then
    rule = cfg.stop_rule
    interval = cfg.curve_interval
    vals = [Validation.build(host, task, cfg, s, device) for s in seeds]
    tokens = 0
    ctx = progress_context() if progress_context is not None else contextlib.nullcontext()
    start = time.perf_counter()
    with ctx:
        bar = tqdm(range(cfg.steps), desc=f"{description} (x{n} packed)", leave=False, dynamic_ncols=True,
                   disable=progress is False if progress is not None else None)  # fmt: skip
        for step in bar:
            for group in opt.param_groups:
                group["lr"] = lr_at(step, cfg)
            host.set_step(step, cfg.steps)
            batches = [training_batch(task, host, cfg.batch_size, gens[k], pos_gens[k], device) for k in range(n)]
            positions, pos_dim = _stack_positions([b.positions for b in batches])  # type: ignore[misc]
            inputs = torch.stack([b.inputs for b in batches])
            targets = torch.stack([b.targets for b in batches])
            batched = vmap(one_seed, in_dims=(0, 0, 0, 0, pos_dim), randomness="different")
            with precision_context(cfg.precision, device):
                losses, correct, scored = batched(stacked, varying, inputs, targets, positions)
            opt.zero_grad(set_to_none=True)
            losses.sum().backward()
            norms = clip_per_seed([p.grad for p in stacked.values() if p.grad is not None], cfg.grad_clip)
            opt.step()
            tokens += batches[0].inputs.numel()
            losses = losses.detach().to(dtype)
            sums += torch.stack([losses, correct.to(dtype), scored.to(dtype), torch.ones_like(losses)], dim=1)
            bad = ~(torch.isfinite(losses) & torch.isfinite(norms))
            first_bad = torch.where(bad & (first_bad < 0), torch.full_like(first_bad, step), first_bad)
            last = losses
            for k in range(n):
                if not done[k]:
                    infos[k].steps = step + 1
            if (step + 1) % interval == 0 or step + 1 == cfg.steps:
                extras = [validation_sums(host, vals[k], stacked, varying, k, step + 1) for k in range(n)]
                values = read_back(torch.cat([sums.flatten(), first_bad, last, *extras]))
                extra_values = values[6 * n :]
                sums.zero_()
                for k in range(n):
                    if done[k]:
                        continue
                    loss_sum, n_correct, n_scored, count = values[4 * k : 4 * k + 4]
                    bad_step, last_loss = values[4 * n + k], values[5 * n + k]
                    if bad_step >= 0:
                        infos[k].status = infos[k].stop_reason = "diverged"
                        infos[k].message = f"non-finite training loss or gradient norm at step {int(bad_step)}"
                        infos[k].steps = int(bad_step)
                        done[k] = True
                        continue
                    infos[k].curve.append({"step": step + 1, "loss": loss_sum / max(count, 1),
                                           "accuracy": n_correct / max(n_scored, 1)})  # fmt: skip
                    if vals[k] is not None:
                        width = 5 * len(vals[k].lengths)  # type: ignore[union-attr]
                        infos[k].curve[-1].update(vals[k].point(extra_values[k * width : (k + 1) * width]))  # type: ignore[union-attr]
                    infos[k].final_loss = last_loss
                    reason = rule.check(infos[k].curve, step + 1, cfg.steps)
                    if reason is not None:  # this seed's weights now, as alone; the stack goes on for the others
                        infos[k].stop_reason = reason
                        _copy_seed(models[k], stacked, names, k)
                        done[k] = stopped[k] = True
                if all(done):
                    break
                live = [i.curve[-1]["loss"] for i, d in zip(infos, done, strict=True) if not d and i.curve]
                if live:
                    bar.set_postfix(loss=f"{sum(live) / len(live):.3f}")
        bar.close()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    wall = time.perf_counter() - start
    for k, model in enumerate(models):
        if not stopped[k]:
            _copy_seed(model, stacked, names, k)
        model.eval()
    for info in infos:
        info.wall_time_s = wall / n
        info.tokens_per_s = tokens / info.wall_time_s if info.wall_time_s > 0 else 0.0
        info.packed_with = n
        if not info.curve and info.status == "ok":
            info.final_loss = math.nan
    return infos
