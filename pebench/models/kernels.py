"""Attention kernels: a registry of same-signature functions that compute one layer's attention, of which each
encoding names one (:attr:`~pebench.encodings.base.PositionalEncoding.attention_kernel`).

A kernel takes an :class:`AttentionCall` -- the layer's transformed q and k, its v (with a carried state's channels,
:mod:`pebench.models.state`), the hidden states, positions, layer, encoding, the forward pass's scratch space and
whether the weights are wanted (:attr:`AttentionCall.want_weights`) -- and returns a :data:`KernelResult`
``(out, weights)``: the attended values ``(B, H, T, width of v)`` and, when the call wants them, the weights
``(B, H, T, T)`` it multiplied v by (before dropout; rows summing to what its weights sum to: 1 for a softmax, at most
1 for stick-breaking's), else None. One signature for training, evaluation and the inspected maps
(:meth:`pebench.models.transformer.Transformer.attention_maps` reads the weights of the layer's own kernel): asking
for the weights may cost time but never changes an operation that makes ``out``. A kernel that cannot return the
weights it used (a fused kernel) computes them on request with the exact same formula by another route and says so.
The call builds the parts a kernel may ask for from the
encoding's hooks: the float mask with every bias (:meth:`AttentionCall.mask`), the bias of a block of query rows
(:meth:`AttentionCall.rows`). The model (:class:`pebench.models.transformer.Attention`) only builds the call and runs
the encoding's kernel, so an encoding that computes its attention in a new way -- its own scores in place of q·kᵀ, its
own weights in place of softmax -- registers a kernel of its own (:func:`register_kernel`) in its own file and names
it; nothing under ``pebench/models/`` changes. Such a kernel hands its scores or weights to :func:`blocked`, which
composes them with the encoding's biases (by rows, from the hidden states) as the built-in kernels do.

Built in (the exact computations of :mod:`pebench.models.attention`, chosen per device as measured in docs/speed.md):

* ``fused`` -- softmax(q·kᵀ·scale + biases)·v through PyTorch's fused SDPA; the exact blocked attention where SDPA
  cannot serve: packed seeds (vmap batches matmuls on every device) and, on the CPU, a mask that needs a gradient
  (SDPA's flash kernel gives none, its math path builds the whole attention). SDPA returns no weights: on request
  they come from the blocked attention with the same mask and scale, beside SDPA's unchanged output;
* ``rows`` -- a bias built block by block of query rows (an encoding's
  :meth:`~pebench.encodings.base.PositionalEncoding.attn_bias` with ``rows=``, and a bias from the hidden states in
  training) inside the blocked attention on the CPU and for packed seeds (:func:`blocked`), where a whole
  ``(B, H, T, T)`` bias and its gradient would make SDPA fall back to its math path; ``fused`` elsewhere.

Encodings register theirs: ``path`` (PaTH's scores, :mod:`pebench.encodings.path`), ``stick_breaking`` (weights other
than softmax, :mod:`pebench.encodings.stick_breaking`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

import torch
from torch import Tensor

from pebench.encodings.base import PositionalEncoding, RowBlock, Wrapper
from pebench.models.attention import FAR_BIAS, add_bias, blocked_causal_attention, causal_additive, needs_grad, sdpa

E = TypeVar("E", bound=PositionalEncoding)

__all__ = [
    "ATTENTION_KERNELS",
    "SOFTMAX_KERNELS",
    "AttentionCall",
    "Kernel",
    "KernelResult",
    "blocked",
    "kernel_for",
    "register_kernel",
    "run_kernel",
]


@dataclass
class AttentionCall:
    """One layer's attention, as a kernel receives it. ``q``, ``k`` ``(B, H, T, qk_dim)`` are transformed by every
    hook of the encoding; ``v`` ``(B, H, T, w)`` carries a state's channels after the head's; ``x`` ``(B, T, d_model)``
    is the hidden states entering the layer's attention; ``shared`` the forward pass's scratch space (None: a layer
    called on its own); ``want_weights`` asks the kernel for its weights."""

    q: Tensor
    k: Tensor
    v: Tensor
    x: Tensor
    positions: Tensor
    layer: int
    pe: PositionalEncoding
    shared: dict[str, Tensor | None] | None
    dropout: float
    want_weights: bool = False
    """Whether the kernel returns the weights it used beside the output (the inspected maps); False in training and
    evaluation."""
    _masks: dict[bool, Tensor | None] = field(default_factory=dict, repr=False)

    @property
    def scale(self) -> float:
        """The scale of the scores, the encoding's :attr:`~pebench.encodings.base.PositionalEncoding.attn_scale`."""
        return self.pe.attn_scale

    @property
    def on_rows(self) -> bool:
        """Whether the blocked attention is the fast route: on the CPU, and for packed seeds (vmap) on any device."""
        return self.x.device.type == "cpu" or torch._C._functorch.is_batchedtensor(self.x)

    def encoding(self, cls: type[E]) -> E:
        """The call's encoding, or the one it wraps (through any :class:`~pebench.encodings.base.Wrapper`), of class
        ``cls``: where a kernel an encoding registers finds that encoding's own methods (PaTH's scores); a one-line
        error for an encoding of another class."""
        pe = self.pe
        while not isinstance(pe, cls) and isinstance(pe, Wrapper):
            pe = pe.inner
        if not isinstance(pe, cls):
            raise TypeError(f"attention kernel {self.pe.attention_kernel!r} computes {cls.__name__}'s attention, not "
                            f"that of encoding {self.pe.name}")  # fmt: skip
        return pe

    @property
    def by_rows(self) -> bool:
        """Whether the bias is built by blocks of query rows (:meth:`rows`): on the fast route of the blocked attention
        (:attr:`on_rows`), always for a bias by rows, in training for a bias from the hidden states."""
        pe = self.pe
        return self.on_rows and (pe.bias_by_rows or pe.reads_hidden and torch.is_grad_enabled())

    def mask(self, hidden: bool = True) -> Tensor | None:
        """The float mask ``(1 or B, H, T, T)`` of the encoding's bias plus its causal part (None: plain causal), with
        the bias from the hidden states when ``hidden``. A bias the same in every layer
        (:attr:`~pebench.encodings.base.PositionalEncoding.bias_shared_by_layers`) is built in the first layer of a
        forward pass and kept in ``shared`` for the others."""
        if hidden not in self._masks:
            pe, shared, q, k, positions, layer = self.pe, self.shared, self.q, self.k, self.positions, self.layer
            reuse = shared is not None and pe.bias_shared_by_layers
            if reuse and "mask" in shared:  # type: ignore[operator]
                mask = shared["mask"]  # type: ignore[index]
            else:
                mask = add_bias(None, pe.attn_bias(q, k, positions, layer), q.dtype)
                if reuse:
                    shared["mask"] = mask  # type: ignore[index]
            if pe.reads_hidden and hidden:
                mask = add_bias(mask, pe.attn_bias(q, k, positions, layer, hidden=self.x), q.dtype)
            self._masks[hidden] = mask
        return self._masks[hidden]

    def hidden_rows(self, per_key: bool = True) -> Callable[[int, int], Tensor] | None:
        """The bias from the hidden states as a function of a block of query rows ``(start, stop)`` ->
        ``(B, H, stop - start, stop)``; None when the encoding has none. With ``per_key`` (softmax weights) from the
        encoding's per-key form ``b`` (:meth:`~pebench.encodings.base.PositionalEncoding.attn_bias` with
        ``per_key=True``) when it has one, as ``b_j - b_i`` floored at :data:`~pebench.models.attention.FAR_BIAS`: the
        row's constant makes the diagonal 0 (FoX's ``c_i - c_j`` exactly), and no ``(B, H, T, T)`` bias and gradient
        is ever built."""
        pe, q, k, x, positions, layer = self.pe, self.q, self.k, self.x, self.positions, self.layer
        if not pe.reads_hidden:
            return None
        key_bias = pe.attn_bias(q, k, positions, layer, hidden=x, per_key=True) if per_key and pe.per_key_bias \
            else None  # fmt: skip
        if key_bias is not None:
            return lambda start, stop: (key_bias[..., None, :stop] - key_bias[..., start:stop, None]).clamp_min(
                FAR_BIAS
            )
        full = pe.attn_bias(q, k, positions, layer, hidden=x)
        return lambda start, stop: full[..., start:stop, :stop]  # type: ignore[index]

    def rows(self, per_key: bool = True) -> Callable[[Tensor, int], Tensor]:
        """The bias of a block of query rows from its scaled scores and first row, ``(scores, start)`` -> the block's
        bias without its causal part: the encoding's :meth:`~pebench.encodings.base.PositionalEncoding.attn_bias` with
        ``rows=`` (or that block of its whole bias), plus the bias from the hidden states by rows (:meth:`hidden_rows`,
        its per-key form with ``per_key``)."""
        pe, q, k = self.pe, self.q, self.k
        mask = None if pe.bias_by_rows else self.mask(hidden=False)
        hidden = self.hidden_rows(per_key)

        def rows(scores: Tensor, start: int) -> Tensor:
            stop = start + scores.shape[-2]
            if pe.bias_by_rows:
                out = pe.attn_bias(q[..., start:stop, :], k[..., :stop, :], self.positions, self.layer,
                                   rows=RowBlock(start, scores))  # fmt: skip
            else:
                out = scores.new_zeros(()) if mask is None else mask[..., start:stop, :stop].float()
            return out if hidden is None else out + hidden(start, stop)

        return rows


KernelResult = tuple[Tensor, Tensor | None]
"""What a kernel returns: the attended values ``(B, H, T, width of v)`` and the weights ``(B, H, T, T)`` it used when
the call wants them (:attr:`AttentionCall.want_weights`), else None."""

Kernel = Callable[[AttentionCall], KernelResult]
"""A kernel: the :data:`KernelResult` of one layer's :class:`AttentionCall`."""

ATTENTION_KERNELS: dict[str, Kernel] = {}
"""The registered kernels by name (:func:`register_kernel`)."""

SOFTMAX_KERNELS: set[str] = set()
"""The registered kernels whose weights are a softmax of the scores (all but those registered with
``softmax=False``): an encoding attending through one of them keeps softmax (what SSMax scales)."""


def register_kernel(name: str, *, softmax: bool = True) -> Callable[[Kernel], Kernel]:
    """Decorator: register an attention kernel under ``name`` (``softmax``: whether its weights are a softmax of the
    scores, :data:`SOFTMAX_KERNELS`); a one-line error when the name is taken."""

    def add(fn: Kernel) -> Kernel:
        if name in ATTENTION_KERNELS and ATTENTION_KERNELS[name] is not fn:
            raise ValueError(f"attention kernel {name!r} is already registered")
        ATTENTION_KERNELS[name] = fn
        if softmax:
            SOFTMAX_KERNELS.add(name)
        return fn

    return add


def kernel_for(pe: PositionalEncoding) -> Kernel:
    """The kernel the encoding names; a one-line error naming the registered kernels when it names none of them."""
    name = pe.attention_kernel
    if name not in ATTENTION_KERNELS:
        known = ", ".join(sorted(ATTENTION_KERNELS))
        raise ValueError(f"encoding {pe.name} names the attention kernel {name!r}; registered: {known}")
    return ATTENTION_KERNELS[name]


def run_kernel(call: AttentionCall) -> KernelResult:
    """The call run through the kernel its encoding names: ``(out, weights)``, the weights present exactly when the
    call wants them; a one-line error naming the kernel when it returns anything else (a kernel of the former
    signature, which returned the output alone)."""
    kernel = kernel_for(call.pe)
    result = kernel(call)
    if not (isinstance(result, tuple) and len(result) == 2 and (result[1] is not None) == call.want_weights):
        want = "(out, weights)" if call.want_weights else "(out, None)"
        raise TypeError(
            f"attention kernel {call.pe.attention_kernel!r} must return {want} (pebench.models.kernels), "
            f"got {type(result).__name__}"
        )
    return result


@register_kernel("fused")
def fused(call: AttentionCall) -> KernelResult:
    """softmax(q·kᵀ·scale + mask)·v: PyTorch's SDPA, or the exact blocked attention for packed seeds and, on the CPU,
    for a mask that needs a gradient. SDPA gives no weights: on request they are the blocked attention's with the same
    q, k, mask and scale (its output discarded), and the output is still SDPA's."""
    q, k, v, mask = call.q, call.k, call.v, call.mask()
    if torch._C._functorch.is_batchedtensor(q):  # packed seeds: matmuls, which vmap batches on every device
        full = mask if mask is not None else causal_additive(q.shape[-2], q.device, q.dtype)
        return blocked_causal_attention(q, k, v, full, call.scale, call.dropout, want_weights=call.want_weights)
    if mask is not None and q.device.type == "cpu" and needs_grad(mask):
        return blocked_causal_attention(q, k, v, mask, call.scale, call.dropout, want_weights=call.want_weights)
    out = sdpa(q, k, v, mask, call.dropout, call.scale)
    if not call.want_weights:
        return out, None
    return out, blocked_causal_attention(q, k, v, mask, call.scale, want_weights=True)[1]


def blocked(call: AttentionCall, *, raw: Tensor | None = None,
            weights: Callable[[Tensor, int], Tensor] | None = None) -> KernelResult:  # fmt: skip
    """The exact blocked attention of the call (:func:`~pebench.models.attention.blocked_causal_attention`) with the
    encoding's biases: built by blocks of query rows where that is the fast route (:attr:`AttentionCall.by_rows`),
    else the whole mask. ``raw`` ``(B, H, T, T)``: unscaled scores in place of q·kᵀ (PaTH's); ``weights(scores,
    start)``: the weights of a block of rows from its masked scores in place of softmax (stick-breaking's; a per-key
    bias from the hidden states is then not used, the weights not being invariant to a constant per row). The
    helper of the kernels an encoding registers for its own scores or weights."""
    q, k, v, scale, dropout, want = call.q, call.k, call.v, call.scale, call.dropout, call.want_weights
    if call.by_rows:
        return blocked_causal_attention(q, k, v, None, scale, dropout, bias_rows=call.rows(per_key=weights is None),
                                        weights=weights, raw=raw, want_weights=want)  # fmt: skip
    return blocked_causal_attention(q, k, v, call.mask(), scale, dropout, weights=weights, raw=raw, want_weights=want)


@register_kernel("rows")
def rows(call: AttentionCall) -> KernelResult:
    """The blocked attention with the bias built by blocks of query rows on the CPU and for packed seeds (always for a
    bias by rows; in training for a bias from the hidden states): :func:`blocked`; else ``fused``."""
    return blocked(call) if call.by_rows else fused(call)
