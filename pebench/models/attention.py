"""Causal attention as the model computes it: the causal masks, an encoding's bias as an SDPA mask, PyTorch's fused
SDPA (:func:`sdpa`) and the exact blocked attention the CPU uses when a bias or custom scores need gradients
(:func:`blocked_causal_attention`). Functions of tensors only: the attention kernels (:mod:`pebench.models.kernels`)
compose them."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor


def causal_mask(length: int, device: torch.device) -> Tensor:
    """Boolean (T, T) mask, True where query i may attend to key j (j <= i)."""
    return torch.ones(length, length, dtype=torch.bool, device=device).tril()


_CAUSAL_ADDITIVE: dict[tuple[int, str, torch.dtype], Tensor] = {}
_CAUSAL_CACHE_SIZE = 8


def causal_additive(length: int, device: torch.device, dtype: torch.dtype) -> Tensor:
    """``(1, 1, T, T)``: 0 where query i may attend to key j (j <= i), -inf elsewhere. Depends only on the length,
    so it is built once per (length, device, dtype) and reused by every layer and step (a few are kept)."""
    key = (length, str(device), dtype)
    mask = _CAUSAL_ADDITIVE.get(key)
    if mask is None:
        if len(_CAUSAL_ADDITIVE) >= _CAUSAL_CACHE_SIZE:
            _CAUSAL_ADDITIVE.pop(next(iter(_CAUSAL_ADDITIVE)))
        mask = torch.zeros(length, length, dtype=dtype, device=device)
        mask = mask.masked_fill(~causal_mask(length, device), float("-inf"))[None, None]
        _CAUSAL_ADDITIVE[key] = mask
    return mask


def attention_mask(bias: Tensor, dtype: torch.dtype) -> Tensor:
    """The float SDPA mask of an encoding's bias: the bias as ``(1 or B, H, T, T)`` plus the causal -inf.

    Always 4-d: PyTorch's CPU flash-attention kernel takes a 4-d float mask but sends a 3-d one to the slower math
    path (measured with the profiler, torch 2.13)."""
    t = bias.shape[-1]
    if bias.dim() == 3:
        bias = bias.unsqueeze(0)
    return bias.to(dtype) + causal_additive(t, bias.device, dtype)


def add_bias(mask: Tensor | None, bias: Tensor | None, dtype: torch.dtype) -> Tensor | None:
    """A float attention mask (None: plain causal) with one more additive bias (None: nothing to add)."""
    if bias is None:
        return mask
    if mask is None:
        return attention_mask(bias, dtype)
    return mask + bias.to(dtype)


BLOCK_ROWS = 64
"""Query rows per block of :func:`blocked_causal_attention`."""

FAR_BIAS = -40.0
"""The floor of a bias built by :meth:`pebench.models.kernels.AttentionCall.hidden_rows` from a per-key bias. A key that
far below the row's own (0 on the diagonal) has a softmax weight under e^-40 (4e-18) of the diagonal's, ten orders of
magnitude below float32's resolution of the row's sum even summed over 1,000 keys, so the attention is the same. Without
the floor a strong recency bias (FoX's, about -0.7 a token at initialisation) leaves the far keys' weights and their
gradients as subnormal floats, which the CPU multiplies many times slower: FoX's training step at seq 256 took 1090 ms
with a floor at -80 (the softmax's gradients still fall under 1e-38) and 514 ms at -40 (the default model, 2-core
CPU)."""


def blocked_causal_attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, scale: float,
                             dropout: float = 0.0, bias_rows: Callable[[Tensor, int], Tensor] | None = None,
                             weights: Callable[[Tensor, int], Tensor] | None = None, raw: Tensor | None = None,
                             want_weights: bool = False) -> tuple[Tensor, Tensor | None]:  # fmt: skip
    """softmax(q·kᵀ·scale + mask)·v computed by blocks of :data:`BLOCK_ROWS` query rows, each against the keys it
    can see (j < the block's end), so about half of the causal upper triangle is never computed.

    Exact (the same sums as dense attention; the masked keys a block skips have weight exp(-inf) = 0). Used on the
    CPU when the mask needs a gradient (a learned or content-dependent bias), where PyTorch's SDPA falls back to
    its dense math path (flash attention gives no gradient for the mask). ``mask`` is the full float mask with its
    causal part; with ``bias_rows`` instead (``mask`` None) the bias of each block is ``bias_rows(scores, start)``
    from the block's scaled scores and the causal part is added here, so no ``(B, H, T, T)`` tensor is built.
    ``weights(scores, start)``, when given, replaces the softmax of each block's masked scores (the weights of an
    encoding's own kernel: :meth:`pebench.encodings.stick_breaking.StickBreaking.weights`). ``raw`` ``(B, H, T, T)``,
    when given, replaces q·kᵀ (:meth:`pebench.encodings.path.PaTH.scores`); both through
    :func:`pebench.models.kernels.blocked`.

    Returns the output and, with ``want_weights``, the weights it multiplied v by ``(B, H, T, T)`` (the softmax or
    ``weights`` of each block, in v's dtype, before dropout; 0 on the keys a block skips), else None. Asking for them
    changes no operation that makes the output."""
    t = q.shape[-2]
    qs = q * scale  # (B, H, T, d): cheaper to scale than the (B, H, T, T) scores
    kt = k.transpose(-1, -2)
    causal = causal_additive(t, q.device, torch.float32) if mask is None else None
    outs, kept = [], []
    for start in range(0, t, BLOCK_ROWS):
        stop = min(t, start + BLOCK_ROWS)
        if raw is None:
            scores = torch.matmul(qs[..., start:stop, :], kt[..., :stop]).float()
        else:
            scores = raw[..., start:stop, :stop].float() * scale
        if causal is not None:
            extra = causal[..., start:stop, :stop]
            if bias_rows is not None:
                extra = bias_rows(scores, start) + extra
        else:
            extra = mask[..., start:stop, :stop].float()  # type: ignore[index]
        scores = scores + extra
        probs = (scores.softmax(-1) if weights is None else weights(scores, start)).to(v.dtype)
        if want_weights:
            kept.append(F.pad(probs, (0, t - stop)))
        if dropout:
            probs = F.dropout(probs, dropout)
        outs.append(torch.matmul(probs, v[..., :stop, :]))
    return join_rows(outs), join_rows(kept) if want_weights else None


def join_rows(blocks: list[Tensor]) -> Tensor:
    """Blocks of query rows ``(..., rows, w)`` joined along the rows (the one block itself when there is one)."""
    return blocks[0] if len(blocks) == 1 else torch.cat(blocks, dim=-2)


def sdpa(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, dropout: float, scale: float) -> Tensor:
    """PyTorch's SDPA, causal (``mask`` None) or with a float mask. When q and k are wider than v (PoPE) or v is
    wider (a state's channels appended), the narrower side is padded with zero columns, which change neither q·k nor
    the output, and the output is cut back to v's width: the fused kernels need one head width, and without them SDPA
    falls back to its math path with the whole ``(T, T)`` attention (docs/speed.md, "PoPE through the fused kernel")."""
    width = v.shape[-1]
    if q.shape[-1] > width:
        v = F.pad(v, (0, q.shape[-1] - width))
    elif q.shape[-1] < width:  # v wider (an encoding's state channels appended): zero columns leave q·k unchanged
        q, k = F.pad(q, (0, width - q.shape[-1])), F.pad(k, (0, width - k.shape[-1]))
    y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=mask is None, dropout_p=dropout,
                                       scale=scale)  # fmt: skip
    return y if y.shape[-1] == width else y[..., :width]


def needs_grad(t: Tensor) -> bool:
    """Whether a gradient will flow into ``t``: it requires one, or it is vmapped (packed seeds) under autograd,
    where ``requires_grad`` of the batched view does not say."""
    return t.requires_grad or (torch.is_grad_enabled() and torch._C._functorch.is_batchedtensor(t))
