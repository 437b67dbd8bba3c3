"""The hook points through which any positional encoding plugs into the model.

The model calls these hooks and never looks at an encoding's name (how each is used, and how they combine:
docs/extending.md, "Adding an encoding"):

* :meth:`PositionalEncoding.embed` -- a vector added to the token embeddings (absolute encodings);
* :meth:`PositionalEncoding.embed_annotations` -- a vector added to the token embeddings from the task's per-token
  annotations, for encodings whose :attr:`~PositionalEncoding.needs` names them (Abacus, position coupling);
* :meth:`PositionalEncoding.transform_qk` -- a transform of queries and keys given positions (rotary family); it may
  change their width (report it in :attr:`PositionalEncoding.qk_dim`);
* :meth:`PositionalEncoding.transform_qk_from_hidden` -- a transform of q and k from the hidden states entering the
  layer's attention, with :attr:`~PositionalEncoding.qk_from_hidden` (CARoPE's token-conditioned phases);
* :meth:`PositionalEncoding.attn_bias` -- an additive bias on the attention scores, per head, from positions and,
  for content-dependent encodings, the (transformed) queries and keys;
* :meth:`PositionalEncoding.attn_bias_from_hidden` -- a bias from the hidden states entering the layer's attention,
  with :attr:`~PositionalEncoding.reads_hidden` (FoX's forget gates); added to :meth:`~PositionalEncoding.attn_bias`'s;
* :meth:`PositionalEncoding.key_bias_from_hidden` -- optional beside it: the same bias as a per-key ``(B, H, T)``
  vector when it differs from one only by a constant per query row (FoX's ``c_i - c_j``);
* :meth:`PositionalEncoding.attention_scores` -- the unscaled scores in place of q·kᵀ, from q, k and the hidden
  states, with :attr:`~PositionalEncoding.custom_scores` (PaTH's Householder products between key and query);
* :meth:`PositionalEncoding.attention_weights` -- the attention weights from the (biased, causally masked) scores,
  replacing softmax, with :attr:`~PositionalEncoding.custom_attention_weights` (stick-breaking attention);
* :meth:`PositionalEncoding.init_state`, :meth:`~PositionalEncoding.transform_qk_with_state`,
  :meth:`~PositionalEncoding.state_values`, :meth:`~PositionalEncoding.update_state` -- a state carried from layer
  to layer of one forward pass, with :attr:`~PositionalEncoding.carries_state` (TAPE's position features);
* :meth:`PositionalEncoding.on_step`, :meth:`~PositionalEncoding.configure_eval` -- the training step (schedules),
  the training and evaluation lengths before an evaluation;
* :meth:`PositionalEncoding.train_positions`, :meth:`~PositionalEncoding.eval_positions` -- the positions of a
  training batch and of an evaluation batch (drawn from the evaluation's own seeded generator).

q and k are built in one place for every attention path (SDPA, dense, blocked, by rows, packed seeds, the inspected
maps), in this order: :meth:`~PositionalEncoding.transform_qk_with_state`, :meth:`~PositionalEncoding.transform_qk`,
:meth:`~PositionalEncoding.transform_qk_from_hidden`; the scores are q·kᵀ or
:meth:`~PositionalEncoding.attention_scores` of those, times :attr:`~PositionalEncoding.attn_scale`, plus the biases,
then softmax or :meth:`~PositionalEncoding.attention_weights`, whose weights also mix a state's
:meth:`~PositionalEncoding.state_values`, appended to v (:mod:`pebench.models.state`). Capabilities and defaults are
class attributes, never name lists, each documented where :class:`PositionalEncoding` declares it; those that only say
a hook is implemented are derived from the hook the class overrides, never declared (:data:`DERIVED_CAPABILITIES`).
A bias that depends only on the positions can be kept between calls with :class:`PositionMemo`.
A :class:`Wrapper` forwards every hook to the encoding it wraps (``self.inner``) and overrides only what it changes; any
position-indexed encoding that is not itself a wrapper can be wrapped (randomized positions, DroPE), see
:func:`pebench.encodings.registry.wrappable`.

Each encoding names its :attr:`PositionalEncoding.family`, one of :data:`FAMILIES`, for people and plots only (the
report draws one small chart per family); the model never reads it:

* ``absolute`` -- a vector added to the token embeddings: sinusoidal, sinonly, learned, sininit, binary,
  binary_norm, decimal, decimal_norm, and from task annotations abacus (the digit's index in its number) and coupling
  (coupled position ids);
* ``rotary`` -- q and k rotated by position-dependent angles: rope and its variants (pi, ntk, yarn, llama3, longrope,
  xpos, lrope, p_rope, partial_rope, the rope_nope hybrid, hope; fope, each pair multiplied by a Fourier series of
  the head's frequencies), pope (position-only phases on softplus magnitudes: a rotation of q and k, at twice the
  width), carope (phases summed over token-conditioned frequencies) and tape (RoPE's cos/sin pairs as per-head
  features updated in every layer from the content);
* ``bias`` -- an additive bias on the attention scores from the distance: alibi, t5, kerple, fire;
* ``content`` -- order read from the content: cope (positions counted by gates), fox (a decay bias from forget
  gates on the hidden states), cable (the same form: ALiBi with token-specific slopes from the hidden states),
  selective (every head's logits minus the earlier tokens' selections by head 0), stick_breaking (attention weights
  broken off from the most recent key backwards), path (scores through the product of data-dependent Householder
  transforms between key and query);
* ``none`` -- no positional information (:attr:`~PositionalEncoding.position_free`): nope, nope_qknorm;
* ``wrapper`` -- wrappers and schedules around another encoding, whatever it is (what they change is the training
  protocol; one chart sets the protocols side by side): randomized_<X> (any X), drope, ssmax_<X>.

Shapes: ``positions`` is ``(T,)`` (shared by the batch) or ``(B, T)``; ``q`` and ``k`` are ``(B, H, T, head_dim)``.
A bias is ``(H, T, T)`` when positions are shared, so it is never materialised per batch element.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import Tensor, nn

from pebench.options import Option, resolve

FAMILIES: dict[str, str] = {
    "absolute": "absolute: added to the token embeddings",
    "rotary": "rotary: q and k rotated by position",
    "bias": "attention bias from the distance",
    "content": "content-dependent: order read from the content",
    "none": "no positional encoding",
    "wrapper": "wrappers and schedules",
}
"""The families of :attr:`PositionalEncoding.family`, in the order the report shows them, with a title each."""


@dataclass(frozen=True)
class EncodingContext:
    """What an encoding may know about the model hosting it."""

    d_model: int
    n_heads: int
    n_layers: int
    max_len: int
    train_length: int = 0
    """The task's training length when known (0: unknown). Encodings whose construction depends on it (YaRN's
    original context in its train mode) read it here; adaptive ones are also told it by :meth:`configure_eval`."""

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads


DERIVED_CAPABILITIES: dict[str, str] = {
    "bias_by_rows": "attn_bias_rows",
    "reads_hidden": "attn_bias_from_hidden",
    "custom_attention_weights": "attention_weights",
    "qk_from_hidden": "transform_qk_from_hidden",
    "custom_scores": "attention_scores",
    "carries_state": "init_state",
}
"""Capability -> the hook whose override it is: each is read (on a class or an instance) as whether the class
overrides that hook of :class:`PositionalEncoding` (:func:`overrides`), never declared; a class that assigns one is
refused when it is defined. A :class:`Wrapper`'s are its inner encoding's (:data:`FORWARDED_CAPABILITIES`)."""


def overrides(cls: type, hook: str) -> bool:
    """Whether class ``cls`` defines ``hook`` other than :class:`PositionalEncoding`'s (its own or inherited)."""
    return getattr(cls, hook) is not getattr(PositionalEncoding, hook)


class _Derived:
    """A capability of :data:`DERIVED_CAPABILITIES`: read-only, on the class and on an instance alike, whether the
    class overrides ``hook`` (the class's, not an instance's: hooks patched on an instance change nothing)."""

    def __init__(self, doc: str) -> None:
        self.__doc__ = doc

    def __set_name__(self, owner: type, name: str) -> None:
        self.name, self.hook = name, DERIVED_CAPABILITIES[name]

    def __get__(self, obj: object, owner: type | None = None) -> bool:
        return overrides(owner if owner is not None else type(obj), self.hook)

    def __set__(self, obj: object, value: object) -> None:
        raise AttributeError(f"{self.name} is derived from whether the class overrides {self.hook}; it cannot be set")


class PositionalEncoding(nn.Module):
    """Base class: every hook is a no-op, so an encoding overrides only the hooks it uses."""

    name: ClassVar[str] = ""
    version: ClassVar[str] = "1"
    description: ClassVar[str] = ""
    paper: ClassVar[str] = ""
    options: ClassVar[dict[str, Option]] = {}
    family: ClassVar[str] = ""
    """One of :data:`FAMILIES` (see the module docstring): how the report groups encodings in its plots. Every
    registered encoding sets it; the model never reads it."""
    position_indexed: ClassVar[bool] = True
    """Whether the encoding reads the index positions (False: they mean nothing to it, so wrapping it with random
    positions or using it as a DroPE base is refused)."""
    position_free: ClassVar[bool] = False
    """Whether a query's keys are a set to it, order coming from the causal mask alone (NoPE, SSMax on NoPE); the
    conformance kit's ``uses position`` checks the declaration either way."""
    default_layers: ClassVar[int | None] = None
    """Transformer blocks this encoding is trained with when the user gives no ``--layers`` (None: the global
    default, :attr:`pebench.models.ModelConfig.n_layers`). An explicit ``--layers`` always wins. Part of the stored
    model configuration like any depth, so changing it changes the model's identity; bump :attr:`version` too."""
    packable: ClassVar[bool] = True
    """Whether the encoding's hooks run under :func:`torch.func.vmap`, so that several seeds can be trained as one
    batched model (:mod:`pebench.engine.packing`); False: its seeds are trained one by one."""
    bias_shared_by_layers: ClassVar[bool] = False
    """Whether :meth:`attn_bias` is the same in every layer of one forward pass (it ignores ``q``, ``k`` and
    ``layer``): the model then calls it in the first layer only and reuses the result (ALiBi, T5's shared table,
    FIRE's shared MLP). False for per-layer parameters (KERPLE) and content-dependent biases (CoPE)."""
    kernel: ClassVar[str] = ""
    """The attention kernel that computes this encoding's attention, by name (:mod:`pebench.models.kernels`); empty:
    the one its capabilities call for (:attr:`attention_kernel`). An encoding that attends in a way no registered
    kernel does registers its own (:func:`pebench.models.kernels.register_kernel`) in its own file and names it."""
    needs: ClassVar[frozenset[str]] = frozenset()
    """Names of the task annotations (:data:`pebench.tasks.base.ANNOTATIONS`) that :meth:`embed_annotations` reads;
    empty: none (the hook is never called). Runs only on tasks whose :attr:`pebench.tasks.base.Task.annotations`
    include them all."""

    # -- capabilities derived from the hooks a class overrides (never declared: see :data:`DERIVED_CAPABILITIES`) --
    bias_by_rows = _Derived("""Whether the class overrides :meth:`attn_bias_rows`: the bias of a
    block of query rows can be computed on its own from those rows' scaled scores (a content-dependent bias whose rows
    are independent, as CoPE's). The model then builds it block by block inside its blocked attention (on the CPU and
    for packed seeds) and reuses the scores instead of computing q·k twice; elsewhere it still calls
    :meth:`attn_bias`, which must give the same values.""")
    reads_hidden = _Derived("""Whether the class overrides :meth:`attn_bias_from_hidden`:
    the encoding adds a bias computed from the hidden states entering each layer's attention (content-dependent gates,
    as FoX's forget gates).""")
    custom_attention_weights = _Derived("""Whether the class overrides
    :meth:`attention_weights`, which then replaces softmax (stick-breaking attention). The model then computes the
    attention by blocks of query rows on every device (never through SDPA's softmax kernels).""")
    qk_from_hidden = _Derived("""Whether the class overrides
    :meth:`transform_qk_from_hidden`: q and k are transformed by a function of the hidden states entering each layer's
    attention (CARoPE's phases summed over the tokens' own frequencies).""")
    custom_scores = _Derived("""Whether the class overrides :meth:`attention_scores`, which then
    replaces q·kᵀ (PaTH attention). The model then computes the attention by blocks of query rows on every device, from
    those scores (never through SDPA).""")
    carries_state = _Derived("""Whether the class overrides :meth:`init_state`: a state carried from
    layer to layer (TAPE's features), with :meth:`update_state` (and :meth:`transform_qk_with_state`,
    :meth:`state_values` when used; the conformance kit checks they go together).""")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name, hook in DERIVED_CAPABILITIES.items():
            if name in vars(cls):
                raise TypeError(f"encoding class {cls.__qualname__} declares {name}: that capability is now derived "
                                f"from the hook it overrides ({hook}); remove the declaration")

    def __init__(self, ctx: EncodingContext, **options: Any) -> None:
        super().__init__()
        self.ctx = ctx
        self.opts: dict[str, Any] = resolve(f"encoding {self.name}", self.options, options)

    # -- hooks -------------------------------------------------------------------------------------------------
    @property
    def qk_dim(self) -> int:
        """Width of q and k after :meth:`transform_qk` (the value width stays ``head_dim``)."""
        return self.ctx.head_dim

    @property
    def attn_scale(self) -> float:
        """Scale of the attention logits q·k (default 1/sqrt(head_dim))."""
        return self.ctx.head_dim**-0.5

    @property
    def attention_kernel(self) -> str:
        """The kernel the model runs (:mod:`pebench.models.kernels`): :attr:`kernel` when named, else ``rows`` for a
        bias by rows or from the hidden states, ``custom`` for custom scores or weights, ``fused`` otherwise."""
        if self.kernel:
            return self.kernel
        if self.bias_by_rows or self.reads_hidden:
            return "rows"
        return "custom" if self.custom_scores or self.custom_attention_weights else "fused"

    def embed(self, positions: Tensor) -> Tensor | None:
        """Vector added to token embeddings: ``(T, d_model)`` or ``(B, T, d_model)``; None for no addition."""
        return None

    def embed_annotations(self, annotations: Mapping[str, Tensor], generator: torch.Generator | None
                          ) -> Tensor | None:  # fmt: skip
        """Only for encodings with :attr:`needs`: a vector ``(B, T, d_model)`` added to the token embeddings (as
        :meth:`embed`'s) from the task's annotations, name -> ``(B, T)`` int64 (every name of :attr:`needs` is there).
        ``generator``: the trainer's positions generator in training, for random training offsets; None at evaluation
        (no randomness). None for no addition."""
        return None

    def transform_qk(self, q: Tensor, k: Tensor, positions: Tensor, layer: int) -> tuple[Tensor, Tensor]:
        """Return transformed (q, k) of shape ``(B, H, T, qk_dim)``."""
        return q, k

    def transform_qk_from_hidden(self, q: Tensor, k: Tensor, x: Tensor, positions: Tensor, layer: int
                                 ) -> tuple[Tensor, Tensor]:  # fmt: skip
        """Only for encodings with :attr:`qk_from_hidden`: ``(q, k)`` ``(B, H, T, qk_dim)``, after the state's transform
        and :meth:`transform_qk`, transformed with ``x`` ``(B, T, d_model)``, the hidden states entering layer
        ``layer``'s attention (after its norm, the input of its q, k, v projections). Returns the same shapes; position
        t may read ``x`` only at positions <= t (causality)."""
        return q, k

    def attn_bias(self, q: Tensor, k: Tensor, positions: Tensor, layer: int) -> Tensor | None:
        """Additive bias on the scaled scores, ``(H, T, T)`` or ``(B, H, T, T)``; None for no bias."""
        return None

    def attn_bias_rows(self, scores: Tensor, q: Tensor, k: Tensor, positions: Tensor, layer: int, start: int) -> Tensor:
        """The bias of query rows ``start .. start + R - 1`` against keys ``0 .. S - 1`` (``S >= start + R``), only
        for encodings with :attr:`bias_by_rows`: ``scores`` ``(B, H, R, S)`` are those rows' scaled scores
        ``q·kᵀ·attn_scale``, ``q`` ``(B, H, R, qk_dim)`` their queries and ``k`` ``(B, H, S, qk_dim)`` the keys.
        Entries of keys after a row's query (``j > start + r``) are masked by the model whatever they hold. Returns
        ``(B, H, R, S)`` (or broadcastable to it), equal to the same block of :meth:`attn_bias`."""
        raise NotImplementedError(f"encoding {self.name} does not compute its bias by rows")

    def attn_bias_from_hidden(self, x: Tensor, positions: Tensor, layer: int) -> Tensor | None:
        """Only for encodings with :attr:`reads_hidden`: an additive bias on the scaled scores from ``x``
        ``(B, T, d_model)``, the hidden states entering layer ``layer``'s attention (after its norm, the input of its
        q, k, v projections). Returns ``(B, H, T, T)`` (or broadcastable to it), added to :meth:`attn_bias`'s; None
        for no bias. Entries of keys after a query are masked by the model whatever they hold."""
        return None

    def key_bias_from_hidden(self, x: Tensor, positions: Tensor, layer: int) -> Tensor | None:
        """Optional, only for encodings with :attr:`reads_hidden`: a per-key bias ``b`` ``(B, H, T)`` such that
        ``attn_bias_from_hidden(x, positions, layer)[..., i, j] - b[..., j]`` is the same for every visible key
        ``j <= i`` of a row ``i`` (a bias ``c_i - c_j`` gives ``b_j = -c_j``). Softmax ignores a constant per row, so
        the attention is the same with either; the model uses ``b`` where that pays and the full bias elsewhere.
        Default None: the encoding has no such form.

        The model uses ``b`` in its blocked attention (CPU and packed seeds, in training): the bias of a block of
        query rows is ``b_j - b_i``, built from the ``(B, H, T)`` vector block by block, so neither a ``(B, H, T, T)``
        bias nor its gradient is ever built (FoX at seq 256: 0.42x -> 0.7x of HF Llama's step throughput, measured
        with ``pebench bench``). Ignored with :attr:`custom_attention_weights` (not softmax, so not invariant to a
        constant per row)."""
        return None

    def attention_scores(self, q: Tensor, k: Tensor, x: Tensor, positions: Tensor, layer: int) -> Tensor:
        """Only for encodings with :attr:`custom_scores`: the unscaled scores ``(B, H, T, T)`` of queries ``q``
        against keys ``k`` ``(B, H, T, qk_dim)`` in place of ``q·kᵀ`` (the default), from them and ``x``
        ``(B, T, d_model)``, the hidden states entering layer ``layer``'s attention (after its norm). The model
        multiplies them by :attr:`attn_scale`, adds the biases and masks the keys after each query (``j > i``), whatever
        those entries hold; entry ``(i, j <= i)`` may read the tokens up to ``i`` only (causality)."""
        return q @ k.transpose(-1, -2)

    def attention_weights(self, scores: Tensor, start: int) -> Tensor:
        """Only for encodings with :attr:`custom_attention_weights`: the attention weights of query rows
        ``start .. start + R - 1`` against keys ``0 .. S - 1`` (``S >= start + R``) from their scores ``(B, H, R, S)``:
        q·kᵀ·attn_scale plus the biases, with -inf on the keys after each row's query (``j > start + r``). Returns
        ``(B, H, R, S)`` weights, 0 on those keys; each row from its own scores only (the model asks by blocks of
        rows). The output is ``weights · v``; default: softmax."""
        return scores.softmax(-1)

    def init_state(self, positions: Tensor, batch_size: int) -> Tensor:
        """Only with :attr:`carries_state`: the state entering the first layer, once per forward pass, from
        ``positions`` ``(T,)`` or ``(B, T)``; a tensor whose first dimension is ``batch_size`` or 1 (broadcast)."""
        raise NotImplementedError(f"encoding {self.name} carries no state")

    def transform_qk_with_state(self, q: Tensor, k: Tensor, state: Tensor, layer: int) -> tuple[Tensor, Tensor]:
        """Only with :attr:`carries_state`: q and k ``(B, H, T, head_dim)`` of layer ``layer`` transformed with the
        state entering it; applied first, then :meth:`transform_qk`, then :meth:`transform_qk_from_hidden`."""
        return q, k

    def state_values(self, state: Tensor, layer: int) -> Tensor | None:
        """Only with :attr:`carries_state`: channels ``s`` ``(B or 1, H, T, w)`` of the state entering layer ``layer``
        that the layer's attention mixes with its own weights ``a`` (custom scores and weights included): appended to v,
        ``Σ_j a_ij s_j`` ``(B, H, T, w)`` goes to :meth:`update_state`. None (default): the state is not attended."""
        return None

    def update_state(self, state: Tensor, attended: Tensor | None, ffn_out: Tensor, layer: int) -> Tensor:
        """Only with :attr:`carries_state`: the state entering layer ``layer + 1`` from the one entering ``layer``,
        ``attended`` (its :meth:`state_values` mixed by the layer's attention weights; None if they were None) and
        ``ffn_out`` ``(B, T, d_model)``, the layer's feed-forward output before the residual addition. Called after
        every block; a token's new state may read only its own and earlier tokens' (causality)."""
        return state

    def on_step(self, step: int, total_steps: int) -> None:
        """Called by the trainer before each optimisation step (``0 <= step < total_steps``)."""

    def configure_eval(self, train_length: int, eval_length: int) -> None:
        """Called before evaluating at ``eval_length`` a model trained at ``train_length``."""

    def train_positions(self, batch_size: int, length: int, generator: torch.Generator | None) -> Tensor:
        """Positions for one training batch; default ``0..length-1`` shared by the batch."""
        return torch.arange(length)

    def eval_positions(self, batch_size: int, length: int, generator: torch.Generator) -> Tensor | None:
        """Positions for one evaluation batch, ``(T,)`` or ``(B, T)``, drawn from ``generator`` (seeded by the
        evaluation); default None: ``0..length-1`` shared by the batch."""
        return None

    def extra_config(self) -> dict[str, Any]:
        """Anything beyond the options that identifies this encoding's configuration (stored with results)."""
        return {}


class _InnerNeeds:
    """A :class:`Wrapper`'s :attr:`~PositionalEncoding.needs`: its inner encoding's on an instance; on the class,
    none, since wrappers wrap only encodings that need no annotations
    (:func:`pebench.encodings.registry.wrappable`)."""

    def __get__(self, obj: Wrapper | None, owner: type | None = None) -> frozenset[str]:
        return frozenset() if obj is None else obj.inner.needs


FORWARDED_CAPABILITIES = (
    "bias_shared_by_layers", "packable", "bias_by_rows", "reads_hidden", "custom_attention_weights", "qk_from_hidden",
    "custom_scores", "carries_state", "kernel",
)  # fmt: skip
"""The capabilities a :class:`Wrapper` takes from the encoding it wraps (the others are its own: a wrapper is not
position-free, is not position-indexed unless it says so, and names its own family and default depth)."""


class Wrapper(PositionalEncoding):
    """An encoding built around another one, ``self.inner`` (set by the subclass's ``__init__``): every hook and
    property of :class:`PositionalEncoding` and every capability of :data:`FORWARDED_CAPABILITIES` is the inner
    encoding's (attached to the class below, so a hook added to the base class is forwarded with no change here); a
    wrapper overrides only what it changes. Its :attr:`~PositionalEncoding.attention_kernel` is read from those
    capabilities as any encoding's."""

    inner: PositionalEncoding
    needs = _InnerNeeds()  # type: ignore[assignment]


def _forwarded_hook(name: str) -> Callable[..., Any]:
    def hook(self: Wrapper, *args: Any, **kwargs: Any) -> Any:
        return getattr(self.inner, name)(*args, **kwargs)

    hook.__name__ = hook.__qualname__ = name
    hook.__doc__ = f"The wrapped encoding's :meth:`PositionalEncoding.{name}`."
    return hook


def _forwarded_attribute(name: str) -> property:
    return property(lambda self: getattr(self.inner, name), doc=f"The wrapped encoding's ``{name}``.")


for _name, _value in vars(PositionalEncoding).items():
    if not _name.startswith("_") and _name != "attention_kernel" and (callable(_value) or isinstance(_value, property)):
        setattr(Wrapper, _name, _forwarded_attribute(_name) if isinstance(_value, property) else _forwarded_hook(_name))
for _name in FORWARDED_CAPABILITIES:
    setattr(Wrapper, _name, _forwarded_attribute(_name))


class PositionMemo:
    """Keeps the last few results of a pure function of shared positions ``(T,)`` (no parameters, no gradient),
    keyed by the positions' values, device and dtype: a bias that depends only on the positions (ALiBi's, T5's
    buckets) is then computed once per length instead of in every layer of every step. Per-sample positions
    ``(B, T)`` (random positions) are computed afresh, never stored."""

    def __init__(self, fn: Callable[[Tensor], Tensor], size: int = 4) -> None:
        self.fn = fn
        self.size = size
        self.entries: list[tuple[Tensor, Tensor]] = []

    def __call__(self, positions: Tensor) -> Tensor:
        if positions.dim() != 1 or positions.requires_grad or torch._C._functorch.is_batchedtensor(positions):
            return self.fn(positions)
        for i, (pos, out) in enumerate(self.entries):
            if pos.device == positions.device and pos.dtype == positions.dtype and pos.shape == positions.shape \
                    and torch.equal(pos, positions):  # fmt: skip
                if i:
                    self.entries.insert(0, self.entries.pop(i))
                return out
        with torch.no_grad():
            out = self.fn(positions)
        self.entries.insert(0, (positions.clone(), out))
        del self.entries[self.size :]
        return out

    def clear(self) -> None:
        self.entries.clear()


def expand_positions(positions: Tensor) -> Tensor:
    """Positions as ``(B or 1, T)``."""
    return positions if positions.dim() == 2 else positions.unsqueeze(0)


def relative_distances(positions: Tensor) -> Tensor:
    """``i - j`` for query position i and key position j: ``(T, T)`` or ``(B, 1, T, T)`` for per-sample positions."""
    if positions.dim() == 1:
        return positions[:, None] - positions[None, :]
    return (positions[:, :, None] - positions[:, None, :]).unsqueeze(1)
