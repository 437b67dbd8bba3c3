"""Mechanism diagnostics: what a trained model's attention and hidden states do as the context grows past the training
length, to test whether an encoding fails for the reasons commonly cited (issue 89; docs/diagnostics.md).

Pure functions of tensors -- :func:`attn_entropy`, :func:`local_mass`, :func:`sink_mass`, :func:`attended_mass` of one
layer's attention weights ``(..., T, T)``, :func:`logit_range` of its pre-softmax logits, :func:`fit_probe` /
:func:`probe_r2` / :func:`position_probe` of hidden states -- and :func:`diagnose`, which runs a model on sequences of
several lengths and reads every layer's weights from the model's own kernel path (:func:`read_layers`, as
:meth:`pebench.models.transformer.Transformer.attention_maps` does). Nothing here changes a model or a score: the
model runs in eval mode without gradients, and its mode and evaluation length are restored afterwards.

Conventions shared by the attention functions: row ``i`` (query ``i``, 0-based) sees the keys ``j <= i`` (causal); the
weights above the diagonal are ignored. Each row is first normalised by its own sum, ``p_ij = w_ij / sum_j w_ij``
(a softmax row already sums to 1; stick-breaking's may sum to less, the rest attending to nothing, which
:func:`attended_mass` reports), and rows whose sum is 0 are left out. Means are over the batch, the heads and the
rows the function names.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
import torch
from torch import Tensor

from pebench.engine.evaluation import eval_length, eval_positions
from pebench.engine.probe import RIDGE, Probe, fit_probe, position_probe, probe_r2
from pebench.hashing import derive_seed
from pebench.models import Transformer
from pebench.models import state as pe_state
from pebench.models.attention import blocked_causal_attention
from pebench.models.kernels import AttentionCall
from pebench.tasks.base import Batch

__all__ = ["PROBE_SEQUENCES", "QK_KERNELS", "RIDGE", "LayerReadout", "Probe", "Rows", "attended_mass", "attn_entropy",
           "call_logits", "diagnose", "first_block", "fit_probe", "local_mass", "logit_range", "position_probe",
           "probe_r2", "read_layers", "rows_of", "sink_mass"]  # fmt: skip

LOGIT_QUANTILE = 0.99
"""The quantile of |logit| that :func:`logit_range` reports."""


class Rows(NamedTuple):
    """One layer's attention rows normalised once (:func:`rows_of`), which every attention diagnostic accepts in place
    of the weights (:func:`diagnose` reads all of them from one)."""

    p: Tensor
    """``p_ij = w_ij / Σ_{j<=i} w_ij`` in float64 over the causal part (0 above the diagonal and in a row of sum 0)."""
    sums: Tensor
    """The row sums ``Σ_{j<=i} w_ij``, ``(..., T)``."""
    keep: Tensor
    """Whether a row is kept: its sum is positive."""


def rows_of(weights: Tensor | Rows) -> Rows:
    """The causal part of ``weights`` ``(..., T, T)`` in float64, each row divided by its sum (:class:`Rows`)."""
    if isinstance(weights, Rows):
        return weights
    if weights.dim() < 2 or weights.shape[-1] != weights.shape[-2]:
        raise ValueError(f"attention weights must be (..., T, T), got {tuple(weights.shape)}")
    t = weights.shape[-1]
    w = weights.detach().double() * torch.ones(t, t, dtype=torch.bool, device=weights.device).tril()
    sums = w.sum(-1)
    keep = sums > 0
    return Rows(w / torch.where(keep, sums, torch.ones_like(sums))[..., None], sums, keep)


def _mean(values: Tensor, keep: Tensor) -> float:
    """The mean of ``values`` where ``keep`` (NaN where nothing is kept)."""
    n = int(keep.sum())
    return float((values * keep).sum() / n) if n else math.nan


def _from(rows: Rows, first: int) -> Tensor:
    """Whether each row is kept and is row ``first`` or later, ``(..., T)``."""
    return rows.keep & (torch.arange(rows.p.shape[-1], device=rows.p.device) >= first)


def attn_entropy(weights: Tensor | Rows) -> float:
    """The mean normalised entropy of the attention rows (Nakanishi 2025, arXiv:2501.19399, "Scalable-Softmax":
    attention fades towards uniform as the context grows; Wang et al. 2024, arXiv:2404.12224: NoPE's length failure
    as attention distraction).

    ``Ĥ_i = -Σ_{j<=i} p_ij log p_ij / log(i + 1)``, with ``p_ij = w_ij / Σ_j w_ij`` (``0 log 0 = 0``): 1 for a uniform
    row over the ``i + 1`` keys it sees, 0 for a one-hot row. Rows ``i >= 1`` (row 0 sees one key, log 1 = 0) of
    positive sum, averaged."""
    rows = rows_of(weights)
    p = rows.p
    norm = torch.arange(1, p.shape[-1] + 1, dtype=p.dtype, device=p.device).log().clamp_min(1e-300)
    return _mean(-torch.xlogy(p, p).sum(-1) / norm, _from(rows, 1))


def local_mass(weights: Tensor | Rows, window: int) -> float:
    """The mean share of a row's attention on the keys less than ``window`` (the training length, in tokens) away
    (Chi et al. 2023, arXiv:2212.10356: length extrapolation works when the effective receptive field stays within
    the training length).

    ``M_i = Σ_{j : 0 <= i - j < window} p_ij``, averaged over the rows ``i >= window``: the rows that see keys farther
    than any row saw in training (every row ``i < window`` has ``M_i = 1`` by construction). NaN when ``T <= window``
    (no such row)."""
    rows = rows_of(weights)
    t, device = rows.p.shape[-1], rows.p.device
    if t <= window:
        return math.nan
    near = torch.ones(t, t, dtype=torch.bool, device=device).tril().triu(1 - window)  # 0 <= i - j < window
    return _mean((rows.p * near).sum(-1), _from(rows, window))


def sink_mass(weights: Tensor | Rows) -> float:
    """The mean share of a row's attention on the first token (Xiao et al. 2023, arXiv:2309.17453, "attention sinks").

    ``S_i = p_i0``, averaged over the rows ``i >= 1`` (row 0 sees key 0 alone)."""
    rows = rows_of(weights)
    return _mean(rows.p[..., 0], _from(rows, 1))


def attended_mass(weights: Tensor | Rows) -> float:
    """The mean row sum ``Σ_{j<=i} w_ij`` over every row: 1 for a softmax, at most 1 for stick-breaking's weights (the
    rest attends to nothing), what the other functions normalise away."""
    return float(rows_of(weights).sums.mean())


def logit_range(logits: Tensor, quantile: float = LOGIT_QUANTILE) -> float:
    """The size of the pre-softmax logits: the ``quantile`` (nearest rank) of ``|s_ij|`` over the visible keys
    ``j <= i`` of the rows ``i >= 1`` (Chen et al. 2023, arXiv:2306.15595: position interpolation keeps the attention
    scores within the bound seen in training, extrapolation does not). Non-finite logits (a key an encoding's bias
    masks) are left out.

    ``s_ij`` is what the kernel turns into weights: ``scale · q_iᵀk_j`` (or the encoding's own scores) plus every
    bias, as :func:`call_logits` rebuilds them. The row's constant is kept (a softmax ignores it, stick-breaking's
    sigmoids do not), so this is not readable from the weights alone: ``log w_ij`` differs from ``s_ij`` by a per-row
    constant for a softmax, and underflows to -inf where the weights do."""
    i, j = torch.tril_indices(logits.shape[-1], logits.shape[-1], device=logits.device)
    i, j = i[i >= 1], j[i >= 1]
    values = logits.detach()[..., i, j].float().abs().flatten().cpu().numpy()
    values = values[np.isfinite(values)]
    if not values.size:
        return math.nan
    rank = max(1, math.ceil(quantile * values.size))
    return float(np.partition(values, rank - 1)[rank - 1])


QK_KERNELS = frozenset({"fused", "rows", "stick_breaking"})
"""The kernels whose logits are ``scale · q·kᵀ`` plus the encoding's biases (:func:`call_logits`): the built-in ones
and stick-breaking's, which changes the weights made of those scores, not the scores. A kernel with scores of its own
(PaTH's ``path``, a plugin's) is not among them: its logits are not exposed."""


def call_logits(call: AttentionCall) -> Tensor | None:
    """The pre-softmax logits ``(B, H, T, T)`` of one layer's attention call (-inf above the diagonal), for a kernel of
    :data:`QK_KERNELS`: ``scale · q_iᵀk_j`` plus the mask with every bias (the bias by rows for an encoding that has
    one), the scores the blocked attention (:func:`pebench.models.attention.blocked_causal_attention`) hands to its
    softmax or to the encoding's weights (``fused`` uses the same mask and scale). None for any other kernel."""
    if call.pe.attention_kernel not in QK_KERNELS:
        return None
    t = call.q.shape[-2]
    if call.pe.bias_by_rows:
        mask, rows = None, call.rows()
    else:
        mask, rows = call.mask(), None
    blocks: list[Tensor] = []

    def keep(scores: Tensor, start: int) -> Tensor:
        blocks.append(torch.nn.functional.pad(scores, (0, t - scores.shape[-1]), value=-math.inf))
        return scores.softmax(-1)

    blocked_causal_attention(call.q, call.k, call.v, mask, call.scale, bias_rows=rows, weights=keep)
    return torch.cat(blocks, dim=-2)


class LayerReadout(NamedTuple):
    """What :func:`read_layers` reads from one forward pass."""

    weights: list[Tensor]
    """Every layer's attention weights ``(B, H, T, T)``, from the layer's own kernel."""
    logits: list[Tensor | None] | None
    """Every layer's pre-softmax logits (:func:`call_logits`; None for a kernel that does not expose them); None when
    not asked for."""
    hidden: Tensor
    """The residual stream leaving the first block ``(B, T, d_model)`` (the input of block 1, before its norm)."""


@torch.no_grad()
def read_layers(model: Transformer, tokens: Tensor, positions: Tensor | None = None,
                annotations: Mapping[str, Tensor] | None = None, logits: bool = True) -> LayerReadout:  # fmt: skip
    """Every layer's attention weights (and logits), and the first block's output, on one batch: the blocks' forward
    as :meth:`~pebench.models.transformer.Transformer.attention_maps` runs it, each layer's attention asked for the
    weights its own kernel uses (:meth:`~pebench.models.transformer.Attention.attend`) before the block itself runs
    (so the hidden states are exactly the model's forward's)."""
    x, positions = model.hidden_states(tokens, positions, annotations)
    pe = model.encoding
    shared = pe_state.scratch(pe, positions, x.shape[0])
    weights: list[Tensor] = []
    scores: list[Tensor | None] | None = [] if logits else None
    hidden = x
    for i, block in enumerate(model.blocks):
        h = block.attn_norm(x)
        _, w = block.attn.attend(h, positions, pe, shared, want_weights=True)
        assert w is not None  # asked for: run_kernel checks the kernel returned them
        weights.append(w)
        if scores is not None:
            scores.append(call_logits(block.attn.call(h, positions, pe, shared)))
        x = block(x, positions, pe, shared)
        if i == 0:
            hidden = x
    return LayerReadout(weights, scores, hidden)


@torch.no_grad()
def first_block(model: Transformer, tokens: Tensor, positions: Tensor | None = None,
                annotations: Mapping[str, Tensor] | None = None) -> Tensor:  # fmt: skip
    """The residual stream leaving the first block ``(B, T, d_model)``, as :func:`read_layers` reads it, without the
    other blocks or the weights: what the position probe reads (:func:`diagnose`)."""
    x, positions = model.hidden_states(tokens, positions, annotations)
    pe = model.encoding
    return model.blocks[0](x, positions, pe, pe_state.scratch(pe, positions, x.shape[0]))


def _summarise(readout: LayerReadout, window: int) -> dict[str, list[float]]:
    """Each per-layer diagnostic of one length's readout, layer by layer (each layer's rows normalised once)."""
    rows = [rows_of(w) for w in readout.weights]
    out = {"attn_entropy": [attn_entropy(r) for r in rows], "local_mass": [local_mass(r, window) for r in rows],
           "sink_mass": [sink_mass(r) for r in rows], "attended_mass": [attended_mass(r) for r in rows]}  # fmt: skip
    if readout.logits is not None:
        out["logit_range"] = [math.nan if s is None else logit_range(s) for s in readout.logits]
    return out


def _ratio(value: float, base: float) -> float:
    return value / base if base else math.nan


def _layer_mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def _inputs(model: Transformer, tokens: Tensor, length: int, n: int, seed: int,
            positions_by_length: Mapping[int, Tensor] | None,
            annotations_by_length: Mapping[int, Mapping[str, Tensor]] | None
            ) -> tuple[Tensor, Tensor | None, dict[str, Tensor] | None]:  # fmt: skip
    """The first ``n`` sequences of one length, their positions (given, else the encoding's evaluation positions as
    evaluation draws them, :func:`pebench.engine.evaluation.eval_positions`, from a generator seeded from (seed,
    "diagnostics positions", length)) and annotations, on the model's device."""
    device = next(model.parameters()).device
    tokens = tokens[:n]
    notes = None if annotations_by_length is None else annotations_by_length.get(length)
    notes = None if notes is None else {k: v[:n] for k, v in notes.items()}
    given = None if positions_by_length is None else positions_by_length.get(length)
    if given is not None:
        given = given[:n] if given.dim() == 2 else given
    gen = torch.Generator().manual_seed(derive_seed(seed, "diagnostics positions", length))
    batch = Batch(tokens, tokens, given, notes)  # targets unused
    positions = eval_positions(model, batch, gen)
    notes = None if notes is None else {k: v.to(device) for k, v in notes.items()}
    return tokens.to(device), None if positions is None else positions.to(device), notes


PROBE_SEQUENCES = 32
"""The training length's sequences the position probe is fitted and cross-validated on (:func:`diagnose`): 8 folds
of 4; with fewer the probe fits the sequences' content as much as their positions (:mod:`pebench.engine.probe`)."""


@torch.no_grad()
def diagnose(model: Transformer, tokens_by_length: Mapping[int, Tensor], train_length: int, n_sequences: int = 8,
             positions_by_length: Mapping[int, Tensor] | None = None,
             annotations_by_length: Mapping[int, Mapping[str, Tensor]] | None = None, seed: int = 0,
             logits: bool = True, probe_sequences: int = PROBE_SEQUENCES) -> dict[str, dict[int, Any]]:  # fmt: skip
    """Every diagnostic of ``model`` at every length of ``tokens_by_length`` (length -> ``(B, T)`` tokens, of which the
    first ``n_sequences`` run), the encoding told each evaluation length as in evaluation
    (:func:`pebench.engine.evaluation.eval_length`), without gradients, in eval mode (the model's mode restored).

    Returns metric -> {length: value}: ``attn_entropy``, ``local_mass`` (window: the token count ``T`` of the training
    length's sequences), ``sink_mass``, ``attended_mass``, ``logit_range`` (with ``logits``; NaN for a kernel outside
    :data:`QK_KERNELS`) as the mean over layers, each also per layer under ``<metric>_by_layer`` ({length: [layer 0,
    layer 1, ...]}); ``logit_range_ratio``, the mean over layers divided by the training length's (per layer:
    ``logit_range_ratio_by_layer``); ``position_r2``, the position probe of the first block's output
    (:func:`~pebench.engine.probe.position_probe`): fitted on the first ``probe_sequences`` of the training length's
    sequences (as many as there are, if fewer), its constant chosen by cross-validation over them and its R² there
    cross-validated, at every other length its R² on the first ``n_sequences``. Cost: one forward pass per length
    plus, per layer, the attention once more for its weights and once more for its logits, and the first block on the
    probe's sequences (docs/diagnostics.md, "Cost")."""
    if train_length not in tokens_by_length:
        raise ValueError(f"tokens_by_length has no sequences at the training length {train_length}")
    window = tokens_by_length[train_length].shape[1]
    was_training = model.training
    per_layer: dict[int, dict[str, list[float]]] = {}
    hidden: dict[int, Tensor] = {}
    model.eval()
    try:
        for length in sorted(tokens_by_length):
            tokens, positions, notes = _inputs(model, tokens_by_length[length], length, n_sequences, seed,
                                               positions_by_length, annotations_by_length)  # fmt: skip
            with eval_length(model, train_length, length):
                readout = read_layers(model, tokens, positions, notes, logits)
            per_layer[length] = _summarise(readout, window)
            hidden[length] = readout.hidden
        fit = _probe_hidden(model, tokens_by_length[train_length], train_length, n_sequences, probe_sequences, seed,
                            positions_by_length, annotations_by_length, hidden[train_length])  # fmt: skip
    finally:
        model.train(was_training)
    return _collect(per_layer, position_probe(fit, hidden), train_length)


def _probe_hidden(model: Transformer, tokens: Tensor, train_length: int, n_sequences: int, probe_sequences: int,
                  seed: int, positions_by_length: Mapping[int, Tensor] | None,
                  annotations_by_length: Mapping[int, Mapping[str, Tensor]] | None, read: Tensor
                  ) -> Tensor:  # fmt: skip
    """The first block's output on the training length's first ``probe_sequences`` sequences: ``read`` (those of
    :func:`read_layers`) when they are no more than ``n_sequences``, else :func:`first_block` on them."""
    n = min(probe_sequences, tokens.shape[0])
    if n <= min(n_sequences, tokens.shape[0]):
        return read[:n]
    tokens, positions, notes = _inputs(model, tokens, train_length, n, seed, positions_by_length,
                                       annotations_by_length)  # fmt: skip
    with eval_length(model, train_length, train_length):
        return first_block(model, tokens, positions, notes)


def _collect(per_layer: dict[int, dict[str, list[float]]], r2: dict[int, float], train_length: int
             ) -> dict[str, dict[int, Any]]:  # fmt: skip
    """:func:`diagnose`'s result from each length's per-layer values and the probe's R²."""
    out: dict[str, dict[int, Any]] = {}
    for length, metrics in per_layer.items():
        for name, values in metrics.items():
            out.setdefault(name, {})[length] = _layer_mean(values)
            out.setdefault(f"{name}_by_layer", {})[length] = values
    if "logit_range" in out:
        base = per_layer[train_length]["logit_range"]
        out["logit_range_ratio"] = {n: _ratio(v, out["logit_range"][train_length])
                                    for n, v in out["logit_range"].items()}  # fmt: skip
        out["logit_range_ratio_by_layer"] = {n: [_ratio(a, b) for a, b in zip(v, base, strict=True)]
                                             for n, v in out["logit_range_by_layer"].items()}  # fmt: skip
    out["position_r2"] = dict(r2)
    return out


DIAGNOSTICS = ("attn_entropy", "local_mass", "sink_mass", "position_probe", "logit_range", "logit_range_ratio")
"""The diagnostics stored in every evaluated result's metrics (:func:`case_diagnostics`)."""
SEQUENCES = 8
"""Evaluation sequences a case's diagnostics read at each length."""


def case_diagnostics(model: Transformer, task: Any, length: int, seed: int, n_sequences: int = SEQUENCES,
                     probe_sequences: int = PROBE_SEQUENCES) -> dict[str, Any]:  # fmt: skip
    """The diagnostics of one evaluated case at its ``length``, as stored in its result's metrics: each of
    :data:`DIAGNOSTICS` (``position_probe``: :func:`diagnose`'s ``position_r2``), their per-layer values under
    ``diagnostics_by_layer``, from ``n_sequences`` sequences of the task's first evaluation split at ``length`` and
    ``max(n_sequences, probe_sequences)`` at the training length (the probe's, :func:`diagnose`), drawn from
    generators seeded from (seed, "diagnostics", task, length). ``local_mass`` at a length up to the training length,
    where no row sees a key beyond the window, is 1 (every key is within it)."""
    train = task.train_length
    tokens, positions, notes = {}, {}, {}
    for n in sorted({train, length}):
        gen = torch.Generator().manual_seed(derive_seed(seed, "diagnostics", task.name, n))
        count = max(n_sequences, probe_sequences) if n == train else n_sequences
        batch = next(iter(task.eval_batches(n, count, gen, task.eval_splits[0], count)))
        tokens[n] = batch.inputs
        if batch.positions is not None:
            positions[n] = batch.positions
        if batch.annotations is not None:
            notes[n] = batch.annotations
    found = diagnose(model, tokens, train, n_sequences, positions or None, notes or None, seed,
                     probe_sequences=probe_sequences)
    out: dict[str, Any] = {}
    by_layer: dict[str, Any] = {}
    for name in DIAGNOSTICS:
        key = "position_r2" if name == "position_probe" else name
        value = found.get(key, {}).get(length, math.nan)
        if name == "local_mass" and length <= train:
            value = 1.0
        out[name] = None if value is None or not math.isfinite(value) else value
        if f"{key}_by_layer" in found:  # non-finite values (no row, no logits exposed) as None: JSON has no NaN
            by_layer[name] = [v if v is not None and math.isfinite(v) else None
                              for v in found[f"{key}_by_layer"][length]]  # fmt: skip
    out["diagnostics_by_layer"] = by_layer
    return out
