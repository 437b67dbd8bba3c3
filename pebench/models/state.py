"""An encoding's state carried from layer to layer of one forward pass
(:attr:`~pebench.encodings.base.PositionalEncoding.carries_state`, TAPE's contextual position features).

The model keeps the state in the forward pass's scratch space (the ``shared`` dict its layers already receive):

1. :func:`scratch` builds that space before the first block, with the state from
   :meth:`~pebench.encodings.base.PositionalEncoding.init_state`;
2. in layer ``n`` the attention transforms q and k with the state
   (:meth:`~pebench.encodings.base.PositionalEncoding.transform_qk` with ``state=``, :func:`qk_keywords`),
   :func:`with_state_values` appends
   the state's :meth:`~pebench.encodings.base.PositionalEncoding.state_values` to v, so that whichever route computes
   the attention (SDPA, the blocked attention on the CPU, packed seeds under vmap) applies the layer's own weights to
   them without ever building the weights, and :func:`split_state_values` takes the attended channels back off the
   output;
3. after the block's feed-forward, :func:`update` replaces the state with
   :meth:`~pebench.encodings.base.PositionalEncoding.update_state`'s, which enters layer ``n + 1``.

For an encoding without a state every function here leaves its input as it is (no copy, no new operation), so other
encodings compute exactly what they did before.
"""

from __future__ import annotations

import torch
from torch import Tensor

from pebench.encodings.base import PositionalEncoding

STATE = "state"
ATTENDED = "attended"


def scratch(pe: PositionalEncoding, positions: Tensor, batch_size: int) -> dict[str, Tensor | None]:
    """One forward pass's scratch space: empty, or holding the encoding's initial state when it carries one."""
    return {STATE: pe.init_state(positions, batch_size)} if pe.carries_state else {}


def state_of(pe: PositionalEncoding, shared: dict[str, Tensor | None] | None) -> Tensor:
    """The state entering the current layer; a one-line error when a layer of a state-carrying encoding is called
    without its forward pass's scratch space."""
    if shared is None or shared.get(STATE) is None:
        raise ValueError(f"encoding {pe.name} carries a state from layer to layer: call the layer with its forward "
                         "pass's scratch space (pebench.models.state.scratch)")  # fmt: skip
    return shared[STATE]  # type: ignore[return-value]


def qk_keywords(pe: PositionalEncoding, x: Tensor, shared: dict[str, Tensor | None] | None) -> dict[str, Tensor]:
    """The keywords of the encoding's :meth:`~pebench.encodings.base.PositionalEncoding.transform_qk` in a layer whose
    attention enters with hidden states ``x``: ``state`` (the state entering the layer) and ``hidden``, each only for
    a class whose override names it (:attr:`~pebench.encodings.base.PositionalEncoding.qk_with_state`, with a state
    carried; :attr:`~pebench.encodings.base.PositionalEncoding.qk_from_hidden`); none for the plain signature."""
    keywords = {}
    if pe.qk_with_state and pe.carries_state:
        keywords["state"] = state_of(pe, shared)
    if pe.qk_from_hidden:
        keywords["hidden"] = x
    return keywords


def with_state_values(pe: PositionalEncoding, v: Tensor, shared: dict[str, Tensor | None] | None, layer: int
                      ) -> Tensor:  # fmt: skip
    """v ``(B, H, T, head_dim)`` with the state's attended channels appended (``(B, H, T, head_dim + w)``); v itself
    when the encoding has none for this layer."""
    if not pe.carries_state:
        return v
    extra = pe.state_values(state_of(pe, shared), layer)
    if extra is None:
        return v
    extra = extra.to(v.dtype).expand(v.shape[0], *extra.shape[1:])
    return torch.cat([v, extra], dim=-1)


def split_state_values(y: Tensor, width: int, shared: dict[str, Tensor | None] | None) -> Tensor:
    """The attention output ``(B, H, T, width)`` of the values; the attended state channels beyond ``width``, if any,
    are kept in ``shared`` for :func:`update`."""
    if y.shape[-1] == width:
        return y
    shared[ATTENDED] = y[..., width:]  # type: ignore[index]
    return y[..., :width]


def update(pe: PositionalEncoding, shared: dict[str, Tensor | None] | None, ffn_out: Tensor, layer: int) -> None:
    """Replace the state in ``shared`` by the one leaving ``layer`` (nothing without a state)."""
    if not pe.carries_state:
        return
    state = state_of(pe, shared)
    shared[STATE] = pe.update_state(state, shared.pop(ATTENDED, None), ffn_out, layer)  # type: ignore[union-attr]
