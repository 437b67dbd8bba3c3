"""Stick-breaking attention (Tan et al., "Scaling Stick-Breaking Attention: An Efficient Implementation and In-depth
Study", ICLR 2025, arXiv:2410.17980, §2-3): softmax replaced by a stick-breaking process over the earlier tokens,
and no positional encoding at all (order comes from the process itself).

For query i and an earlier key j < i, with the scaled score z_ij = q_i·k_j / sqrt(d_h),

    break point  β_ij = σ(z_ij),
    weight       A_ij = β_ij · Π_{j<k<i} (1 - β_ik),

so the most recent key takes its share β of the stick first, the next one a share of what is left, and so on
backwards. In log space, as the paper computes it for stability (log σ and log(1 - σ(z)) = -softplus(z) never
underflow the way a product of many σ does):

    log A_ij = log σ(z_ij) - Σ_{k=j+1}^{i-1} softplus(z_ik),

a reverse cumulative sum of softplus over the row's keys (here a flipped cumsum shifted by one key, so no
difference of large sums loses precision).

The keys are strictly earlier (j < i): the authors' reference (``stickbreaking_attention/sb_ref.py`` and its tests,
``attend_current=False`` by default) masks the diagonal. The weights of a row sum to at most 1 and are not
renormalised; the released code gives the leftover 1 - Σ_j A_ij to the current token's own value,
o_i = Σ_{j<i} A_ij v_j + (1 - Σ_{j<i} A_ij) v_i (their reference and kernel tests compare against
``o + rem[..., None] * v``), which is the default here (``remainder="self"``: the leftover becomes the diagonal's
weight, so the first token attends to itself). ``remainder="drop"`` leaves it out (o_i = Σ_{j<i} A_ij v_j; the
first token's output is 0).

The encoding attends through a kernel of its own, ``stick_breaking`` (:func:`stick_breaking_attention`, registered
with ``softmax=False``): the model's blocked attention (:func:`pebench.models.kernels.blocked`) with
:meth:`StickBreaking.weights` in place of softmax, on every device (never SDPA, whose kernels are softmax-only); every
row's weights depend only on that row's scores, so they are computed by blocks of query rows. Index positions are not
used, so shifting them changes nothing.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from pebench.encodings.base import PositionalEncoding
from pebench.encodings.registry import register
from pebench.models.kernels import AttentionCall, KernelResult, blocked, register_kernel
from pebench.options import Option

_SUBNORMAL = -40.0
"""Log weights below it (weights under 4e-18) are set to 0: ten orders of magnitude below float32's resolution of a
row's sum, so the output is the same, while letting them fall to subnormal floats (under 1.2e-38, in the weights or
in their gradients) made the CPU's matmuls with them several times slower (the default model's training step at seq
256: 1026 ms -> 578 ms with this and the hand-written backward, measured on the 2-core CPU)."""


class _StickBreaking(torch.autograd.Function):
    """The stick-breaking weights with a backward written from the formula, so training keeps two ``(R, S)`` tensors
    per block (z and the weights) and runs six passes over them, where autograd through the log-space forward kept
    about ten and ran about twenty (docs/speed.md).

    Forward, with z = -inf on the keys j >= i (so softplus(z) = 0 and the weight exp(-inf) = 0 there):
    log A_ij = log σ(z_ij) - Σ_{j<k<i} softplus(z_ik) = z_ij - Σ_{j<=k<i} softplus(z_ik)  (log σ(z) = z - softplus(z)).
    Backward: with G the gradient of A (on the leftover, each earlier weight's gradient less the diagonal's, since
    the leftover is 1 - Σ_j A_ij), dlogA = G ⊙ A and, as z_ik enters every log A_ij with j <= k,
    dz_ij = dlogA_ij - σ(z_ij) · Σ_{j'<=j} dlogA_ij'."""

    generate_vmap_rule = True  # packed seeds

    @staticmethod
    def forward(z: Tensor, start: int, remainder: bool) -> tuple[Tensor, Tensor]:  # type: ignore[override]
        after = F.softplus(z).flip(-1).cumsum(-1).flip(-1)  # Σ_{k>=j} over the earlier keys (0 past them)
        log_weights = z - after
        weights = log_weights.masked_fill_(log_weights < _SUBNORMAL, float("-inf")).exp_()
        if not remainder:
            return weights, weights.new_zeros(())
        leftover = 1.0 - weights.sum(-1)  # >= 0 but for float rounding
        weights.diagonal(offset=start, dim1=-2, dim2=-1).add_(leftover.clamp_min(0.0))  # the diagonal held 0
        return weights, leftover

    @staticmethod
    def setup_context(ctx: torch.autograd.function.FunctionCtx, inputs: tuple, output: tuple) -> None:
        z, start, remainder = inputs
        weights, leftover = output
        ctx.save_for_backward(z, weights, leftover)
        ctx.start, ctx.remainder = start, remainder
        ctx.mark_non_differentiable(leftover)

    @staticmethod
    def backward(ctx: torch.autograd.function.FunctionCtx, grad: Tensor, _: Tensor) -> tuple:  # type: ignore[override]
        z, weights, leftover = ctx.saved_tensors
        if ctx.remainder:  # the leftover's share: -G_ii on each earlier key of rows where it was not clamped
            own = grad.diagonal(offset=ctx.start, dim1=-2, dim2=-1) * (leftover >= 0)
            grad = grad - own.unsqueeze(-1)
        dlog = grad * weights  # the diagonal's weight is the leftover, whose own gradient is not through z
        if ctx.remainder:
            dlog.diagonal(offset=ctx.start, dim1=-2, dim2=-1).zero_()
        return dlog - torch.sigmoid(z) * dlog.cumsum(-1), None, None


def stick_breaking_weights(scores: Tensor, start: int, remainder: str = "self") -> Tensor:
    """Stick-breaking weights of query rows ``start .. start + R - 1`` against keys ``0 .. S - 1`` from their scaled
    scores ``(..., R, S)`` (entries of keys j >= i are ignored, whatever they hold): ``(..., R, S)`` in float32."""
    r, s = scores.shape[-2:]
    query = torch.arange(start, start + r, device=scores.device).view(r, 1)
    key = torch.arange(s, device=scores.device).view(1, s)
    z = scores.float().masked_fill(key >= query, float("-inf"))  # only the strictly earlier keys
    weights, _ = _StickBreaking.apply(z, start, remainder == "self")
    return weights


@register_kernel("stick_breaking", softmax=False)
def stick_breaking_attention(call: AttentionCall) -> KernelResult:
    """The blocked attention with the encoding's stick-breaking weights (:meth:`StickBreaking.weights`) in place of
    softmax, composed with any bias by :func:`pebench.models.kernels.blocked`."""
    return blocked(call, weights=call.encoding(StickBreaking).weights)


@register
class StickBreaking(PositionalEncoding):
    name = "stick_breaking"
    family = "content"
    position_indexed = False
    kernel = "stick_breaking"
    description = "stick-breaking attention: A_ij = σ(z_ij)·Π_{j<k<i}(1 - σ(z_ik)) instead of softmax, no positions"
    paper = "Tan et al. 2024, arXiv:2410.17980"
    options = {
        "remainder": Option("self", "where the mass left after the earlier keys goes: 'self' (the current token's "
                            "value, as the authors' code) or 'drop' (nowhere)", type=str, choices=("self", "drop")),
    }

    def weights(self, scores: Tensor, start: int) -> Tensor:
        """The weights of query rows ``start .. start + R - 1`` against keys ``0 .. S - 1`` (``S >= start + R``) from
        their scores ``(B, H, R, S)`` (q·kᵀ·attn_scale plus the biases, -inf on each row's later keys): ``(B, H, R,
        S)``, 0 on those keys, each row from its own scores only."""
        return stick_breaking_weights(scores, start, self.opts["remainder"])
