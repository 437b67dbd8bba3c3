"""An encoding's contract, property by property, measured on a small model (2 blocks, width 32, 2 heads) fed the
batches of a probe task: among the registered tasks that provide the encoding's ``needs``, one with the fewest
annotations and the longest training sequences, at twice its training length (so that the model's blocked
attention, by blocks of 64 query rows, runs more than one block):

* ``hook shapes``: every hook the model calls, on both routes, returns the shape and dtype its docstring gives
  (:mod:`pebench.testing.shapes`); a failure names the source, the hook and the expected shape in one line, and the
  other properties are not measured;
* ``causality``: the logits up to position t do not move when the tokens after t change (half way; both the
  evaluation route, no gradient, and the training route, with gradients);
* ``batch independence``: a sample's logits are the same alone and in a batch of 3 (both routes);
* ``determinism``: two models built from one seed have the same weights and logits, and one model gives the same
  logits twice (the global random generator is *not* reseeded between the two calls, so a hook drawing from it
  fails here; every other property reseeds it before each call, so such a hook fails only this one);
* ``checkpoint round-trip``: a model built from another seed that loads the state dict gives the same logits;
* ``option errors``: each out-of-range value of a declared option, and an unknown option, is a one-line
  :class:`~pebench.errors.OptionError`;
* ``shift invariance`` (only for the relative families :data:`RELATIVE_FAMILIES`, unless the class says
  ``shift_invariant = False``): the logits at positions ``s .. s+T-1`` equal those at ``0 .. T-1``;
* ``uses position``: on a model of one block with sharp attention (its q, k and v projections times :data:`GAIN`),
  the logits at the last position change when the tokens before it are permuted, positions and annotations staying
  in place (at the encoding's initial parameters or at random ones, for one that starts out blind, a table at zero);
  an encoding that declares ``position_free`` (NoPE: order from the causal mask alone, which one block cannot read)
  must leave them unchanged instead;
* ``capabilities``: the declarations and the roles the (innermost) class implements go together (a per-key bias
  with the bias from the hidden states, annotations with ``needs``, a state's hooks with ``init_state`` and
  ``update_state``), a bias declared shared by the layers is the same in the first and the last layer for other
  queries and keys, and an encoding that declares it reads no index positions gives the same logits at shifted
  positions;
* ``throughput vs rope``: training steps per second of this model over those of the same model with ``rope``,
  best of 3 (passes from :data:`MIN_THROUGHPUT`).

Differences are relative to the largest logit (the model's scale) and pass up to :data:`TOLERANCE`.
"""

from __future__ import annotations

import io
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from pebench import encodings, tasks
from pebench.encodings.base import EncodingContext, PositionalEncoding, Wrapper, derived, names, overrides
from pebench.models import ModelConfig, Transformer
from pebench.tasks.base import ANNOTATIONS, IGNORE, Batch, Task
from pebench.testing.report import FAIL, PASS, SKIP, Property, Report, measured, option_errors
from pebench.testing.shapes import HookShapeError, check_hook_shapes

RELATIVE_FAMILIES = ("rotary", "bias")
"""Families whose scores depend on positions only through their differences: shift invariance is checked."""
TOLERANCE = 1e-5
"""Largest relative difference of logits that counts as equal (float32 rounding)."""
SHIFT_TOLERANCE = 1e-5
"""The same for shifted positions (rope measures 3e-7 here; FIRE, not shift-invariant past its threshold, 6e-5)."""
SHIFT = 9
MOVED = TOLERANCE
"""A relative change of the last position's logits beyond this counts as using the positions (``uses position``:
rope measures 0.04, decimal_norm, the least of the built-ins, 1.6e-4; NoPE 3e-7, float32 rounding)."""
GAIN = 8.0
"""``uses position`` multiplies the q, k and v projections by this: scores 64 times the initial ones, so a query's
attention is sharp and the order of its keys shows in its output."""
MIN_THROUGHPUT = 0.1
"""The slowest step throughput, as a fraction of rope's, that passes: an order of magnitude slower (a Python loop over
positions, say) fails."""
REFERENCE = "rope"
BATCH = 3


@dataclass
class Probe:
    """How the properties build models and batches for one encoding class."""

    cls: type[PositionalEncoding]
    options: dict[str, Any]
    task: Task
    cfg: ModelConfig
    ctx: EncodingContext

    def build(self, seed: int = 0, cls: type[PositionalEncoding] | None = None) -> Transformer:
        torch.manual_seed(seed)
        encoding = (cls or self.cls)(self.ctx, **(self.options if cls is None else {}))
        return Transformer(self.cfg, encoding)

    def batch(self, seed: int, size: int = BATCH) -> Batch:
        return self.task.sample(size, probe_length(self.task), torch.Generator().manual_seed(seed), "train")


def probe_length(task: Task) -> int:
    """The length the properties sample at: the quick tier's second length (2x the training length)."""
    quick = task.eval_lengths("quick")
    return quick[1] if len(quick) > 1 else quick[0]


def probe_task(cls: type[PositionalEncoding]) -> Task:
    """Among the registered tasks providing everything ``cls`` needs, one with the fewest annotations and the
    longest training sequences (then the first by name)."""
    fits = [tasks.build(n) for n in tasks.available() if set(cls.needs) <= set(tasks.get(n).annotations)]
    if not fits:
        raise ValueError(f"no registered task provides the annotations {sorted(cls.needs)}")
    return min(fits, key=lambda t: (len(t.annotations), -t.tokens(t.train_length), t.name))


def make_probe(cls: type[PositionalEncoding], options: Mapping[str, Any] | None = None, layers: int = 2) -> Probe:
    task = probe_task(cls)
    cfg = ModelConfig(vocab_size=task.vocab_size, d_model=32, n_layers=layers, n_heads=2, dropout=0.0)
    ctx = EncodingContext(d_model=32, n_heads=2, n_layers=layers, max_len=task.max_length(),
                          train_length=task.train_length)  # fmt: skip
    return Probe(cls, dict(options or {}), task, cfg, ctx)


def logits(model: Transformer, batch: Batch, positions: Tensor | None = None, route: str = "eval",
           seed: int | None = 0) -> Tensor:  # fmt: skip
    """The logits of ``batch`` on the evaluation route (no gradient) or the training route (gradients on, which
    sends learned biases through the blocked attention); the global generator reseeded first unless ``seed`` is
    None."""
    if seed is not None:
        torch.manual_seed(seed)
    pos = batch.positions if positions is None else positions
    model.train(route == "train")
    with torch.set_grad_enabled(route == "train"):
        return model(batch.inputs, pos, batch.annotations).detach().float()


def _rel(a: Tensor, b: Tensor) -> float:
    scale = max(a.abs().max().item(), b.abs().max().item(), 1e-12)
    return (a - b).abs().max().item() / scale


def _rows(batch: Batch, i: int) -> Batch:
    pos = batch.positions
    pos = pos[i : i + 1] if pos is not None and pos.dim() == 2 else pos
    notes = None if batch.annotations is None else {k: v[i : i + 1] for k, v in batch.annotations.items()}
    return Batch(batch.inputs[i : i + 1], batch.targets[i : i + 1], pos, notes)


def _splice(a: Batch, b: Batch, cut: int) -> Batch:
    """``a`` up to position ``cut``, ``b`` after it."""

    def join(x: Tensor, y: Tensor) -> Tensor:
        return torch.cat([x[:, : cut + 1], y[:, cut + 1 :]], dim=1)

    notes = None if a.annotations is None else {k: join(v, b.annotations[k]) for k, v in a.annotations.items()}
    return Batch(join(a.inputs, b.inputs), join(a.targets, b.targets), a.positions, notes)


def _verdict(name: str, diff: float, tol: float, detail: str) -> Property:
    return Property(name, PASS if diff <= tol else FAIL, measured(diff), f"{detail} (passes up to {tol:g})")


def causality(p: Probe) -> Property:
    model, a, b = p.build(), p.batch(1), p.batch(2)
    cut = a.inputs.shape[1] // 2
    mixed = _splice(a, b, cut)
    diff = max(_rel(logits(model, a, route=r)[:, : cut + 1], logits(model, mixed, route=r)[:, : cut + 1])
               for r in ("eval", "train"))  # fmt: skip
    return _verdict("causality", diff, TOLERANCE, f"max relative change of the logits up to position {cut} when "
                    "the later tokens change")  # fmt: skip


def batch_independence(p: Probe) -> Property:
    model, a = p.build(), p.batch(1)
    diff = 0.0
    for route in ("eval", "train"):
        full = logits(model, a, route=route)
        for i in range(a.inputs.shape[0]):
            diff = max(diff, _rel(full[i : i + 1], logits(model, _rows(a, i), route=route)))
    return _verdict("batch independence", diff, TOLERANCE, f"max relative change of a sample's logits alone vs in "
                    f"a batch of {BATCH}")  # fmt: skip


def determinism(p: Probe) -> Property:
    one, two, a = p.build(0), p.build(0), p.batch(1)
    s1, s2 = one.state_dict(), two.state_dict()
    weights = max(((s1[k].float() - s2[k].float()).abs().max().item() for k in s1 if s1[k].numel()), default=0.0)
    first = logits(one, a, seed=None)
    diff = max(weights, _rel(first, logits(one, a, seed=None)), _rel(first, logits(two, a, seed=None)))
    return _verdict("determinism", diff, TOLERANCE, "max relative difference of two builds from one seed and of two "
                    "calls")  # fmt: skip


def checkpoint_round_trip(p: Probe) -> Property:
    model, a = p.build(0), p.batch(1)
    buf = io.BytesIO()
    torch.save(model.state_dict(), buf)
    buf.seek(0)
    fresh = p.build(1)
    fresh.load_state_dict(torch.load(buf, weights_only=True))
    diff = _rel(logits(model, a), logits(fresh, a))
    return _verdict("checkpoint round-trip", diff, TOLERANCE, "max relative difference after loading the state dict "
                    "into a model built from another seed")  # fmt: skip


def shift_invariance(p: Probe) -> Property:
    if p.cls.family not in RELATIVE_FAMILIES:
        return Property("shift invariance", SKIP, "-", f"family {p.cls.family or '(none)'!r} is not relative "
                        f"({', '.join(RELATIVE_FAMILIES)})")  # fmt: skip
    if getattr(p.cls, "shift_invariant", True) is False:
        return Property("shift invariance", SKIP, "-", "the class declares shift_invariant = False")
    model, a = p.build(), p.batch(1)
    pos = torch.arange(a.inputs.shape[1])
    diff = _rel(logits(model, a, pos), logits(model, a, pos + SHIFT))
    return _verdict("shift invariance", diff, SHIFT_TOLERANCE, f"max relative change of the logits at positions "
                    f"shifted by {SHIFT}")  # fmt: skip


def hook_shapes(p: Probe, source: str) -> Property:
    try:
        called = check_hook_shapes(p.build(), p.batch(1), source)
    except HookShapeError as err:
        return Property("hook shapes", FAIL, err.hook, str(err))
    return Property("hook shapes", PASS, f"{len(called)} hooks", f"shapes and dtypes of {', '.join(called)} on both "
                    "routes")  # fmt: skip


def _prefix_permuted(batch: Batch) -> Batch:
    """``batch`` with the tokens before the last one in another order; positions and annotations stay in place."""
    t = batch.inputs.shape[1]
    order = torch.cat([torch.randperm(t - 1, generator=torch.Generator().manual_seed(5)), torch.tensor([t - 1])])
    return Batch(batch.inputs[:, order], batch.targets, batch.positions, batch.annotations)


def uses_position(p: Probe) -> Property:
    one = make_probe(p.cls, p.options, layers=1)
    model, a = one.build(), one.batch(1)
    b = _prefix_permuted(a)
    with torch.no_grad():  # sharp attention, where the order of the keys shows (near-uniform at the initial weights)
        for block in model.blocks:
            block.attn.qkv.weight.mul_(GAIN)
    diff = _rel(logits(model, a)[:, -1], logits(model, b)[:, -1])
    with torch.no_grad():  # an encoding blind at its initial values (a table at zero) is measured again
        g = torch.Generator().manual_seed(7)
        for param in model.encoding.parameters():
            if param.is_floating_point():
                param.add_(torch.randn(param.shape, generator=g, dtype=param.dtype))
    diff = max(diff, _rel(logits(model, a)[:, -1], logits(model, b)[:, -1]))
    what = ("max relative change of the last position's logits when the tokens before it are permuted (one block, "
            "the encoding's initial and random parameters)")  # fmt: skip
    if p.cls.position_free:
        return _verdict("uses position", diff, TOLERANCE, f"{what}; none, as the class declares position_free")
    if diff > MOVED:
        return Property("uses position", PASS, measured(diff), f"{what}; passes above {MOVED:g}")
    return Property("uses position", FAIL, measured(diff), f"{what}: at most {MOVED:g}, so the output ignores the "
                    "positions; an encoding that carries none declares position_free = True, as NoPE does")


def capabilities(p: Probe) -> Property:
    model = p.build()
    outer = model.encoding
    inner = outer
    while isinstance(inner, Wrapper):
        inner = inner.inner
    c = type(inner)
    rules = {
        "attn_bias: per_key => hidden": not derived(c, "per_key_bias") or derived(c, "reads_hidden"),
        "bias_shared_by_layers => attn_bias": not inner.bias_shared_by_layers or overrides(c, "attn_bias"),
        "needs <=> embed(annotations)": bool(inner.needs) == names(c, "embed", "annotations"),
        "init_state <=> update_state": overrides(c, "init_state") == overrides(c, "update_state"),
        "transform_qk(state) or state_values => init_state":
            overrides(c, "init_state") or not (derived(c, "qk_with_state") or overrides(c, "state_values")),
        "needs are known annotations": set(inner.needs) <= set(ANNOTATIONS),
    }  # fmt: skip
    a = p.batch(1)
    pos = torch.arange(a.inputs.shape[1])
    if outer.bias_shared_by_layers:
        g = torch.Generator().manual_seed(3)
        shape = (BATCH, p.ctx.n_heads, len(pos), outer.qk_dim)
        q1, k1, q2, k2 = (torch.randn(shape, generator=g) for _ in range(4))
        with torch.no_grad():
            first, last = outer.attn_bias(q1, k1, pos, 0), outer.attn_bias(q2, k2, pos, p.ctx.n_layers - 1)
        same = (first is None and last is None) or (first is not None and last is not None and
                                                      _rel(first.float(), last.float()) <= TOLERANCE)  # fmt: skip
        rules["bias_shared_by_layers: one bias in every layer"] = same
    if not outer.position_indexed and not isinstance(outer, Wrapper):
        rules["not position_indexed: positions change nothing"] = \
            _rel(logits(model, a, pos), logits(model, a, pos + SHIFT)) <= TOLERANCE  # fmt: skip
    broken = [rule for rule, ok in rules.items() if not ok]
    return Property("capabilities", FAIL if broken else PASS, f"{len(rules) - len(broken)}/{len(rules)}",
                    "declared capabilities and the hooks overridden consistent" if not broken else
                    "inconsistent: " + "; ".join(broken))  # fmt: skip


def _step_time(model: Transformer, batch: Batch, steps: int, repeats: int) -> float:
    """Best wall time of ``steps`` training steps (AdamW), over ``repeats`` after one warm-up step."""
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step() -> None:
        out = model(batch.inputs, batch.positions, batch.annotations)
        loss = F.cross_entropy(out.flatten(0, 1), batch.targets.flatten(), ignore_index=IGNORE)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    step()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(steps):
            step()
        best = min(best, time.perf_counter() - start)
    return best


def throughput(p: Probe, steps: int = 2, repeats: int = 3) -> Property:
    batch = p.batch(1, size=8)
    mine = _step_time(p.build(), batch, steps, repeats)
    ref = _step_time(p.build(cls=encodings.get(REFERENCE)), batch, steps, repeats)
    ratio = ref / mine
    return Property(f"throughput vs {REFERENCE}", PASS if ratio >= MIN_THROUGHPUT else FAIL, f"{ratio:.2f}x",
                    f"training steps per second over {REFERENCE}'s, same model, batch 8 x {batch.inputs.shape[1]} "
                    f"tokens, best of {repeats} (passes from {MIN_THROUGHPUT:g}x)")  # fmt: skip


def check_encoding_class(cls: type[PositionalEncoding], options: Mapping[str, Any] | None = None,
                         source: str = "", speed: bool = True) -> Report:  # fmt: skip
    """Every property of the module docstring for ``cls`` (built with ``options``), one :class:`Property` each."""
    report = Report("encoding", cls.name or cls.__qualname__, source or f"module {cls.__module__}")
    p = report.built(lambda: make_probe(cls, options))
    if p is None or report.built(p.build) is None:
        return report
    report.add("hook shapes", lambda: hook_shapes(p, report.source))
    if not report.passed:  # every other measurement would fail on the same wrong shape, less clearly
        return report
    report.add("causality", lambda: causality(p))
    report.add("batch independence", lambda: batch_independence(p))
    report.add("determinism", lambda: determinism(p))
    report.add("checkpoint round-trip", lambda: checkpoint_round_trip(p))
    report.add("option errors", lambda: option_errors(f"encoding {report.name}", cls.options,
                                                      lambda o: cls(p.ctx, **{**p.options, **o})))  # fmt: skip
    report.add("shift invariance", lambda: shift_invariance(p))
    report.add("uses position", lambda: uses_position(p))
    report.add("capabilities", lambda: capabilities(p))
    if speed:
        report.add(f"throughput vs {REFERENCE}", lambda: throughput(p))
    return report
