"""The roles through which any positional encoding plugs into the model.

:class:`PositionalEncoding` has ten hooks; the model calls them and never looks at an encoding's name (how each is
used, and how they combine: docs/extending.md, "Adding an encoding"). A variant of a role is a keyword of its hook,
passed only to a class whose override names it (:data:`DERIVED_CAPABILITIES`), so an override of the plain signature
keeps working:

* :meth:`~PositionalEncoding.embed` -- a vector added to the token embeddings (absolute encodings); with
  ``annotations=`` and ``generator=`` for an encoding whose :attr:`~PositionalEncoding.needs` names task annotations
  (Abacus, position coupling), whose vector is never scaled by ``scale_embeddings``;
* :meth:`~PositionalEncoding.transform_qk` -- a transform of queries and keys (rotary family; a new width is reported
  in :attr:`~PositionalEncoding.qk_dim`); with ``hidden=``, the hidden states entering the layer's attention
  (CARoPE's token-conditioned phases), with ``state=``, the state carried from the previous layer (TAPE's features);
* :meth:`~PositionalEncoding.attn_bias` -- an additive bias on the scaled attention scores, per head, from positions
  and, for content-dependent encodings, the (transformed) queries and keys; with ``rows=`` (a :class:`RowBlock`), that
  bias for a block of query rows from their scaled scores (CoPE); with ``hidden=``, the bias from the hidden states
  (FoX's forget gates, CABLE), and with ``per_key=True`` beside it, that bias as a per-key vector (FoX's ``-c_j``);
* :meth:`~PositionalEncoding.init_state`, :meth:`~PositionalEncoding.state_values`,
  :meth:`~PositionalEncoding.update_state` -- a state carried from layer to layer of one forward pass
  (:attr:`~PositionalEncoding.carries_state`, TAPE's position features; :mod:`pebench.models.state`);
* :meth:`~PositionalEncoding.on_step`, :meth:`~PositionalEncoding.configure_eval` -- the training step (schedules),
  the training and evaluation lengths before an evaluation;
* :meth:`~PositionalEncoding.positions` -- the positions of a training or an evaluation batch (random positions);
* :meth:`~PositionalEncoding.extra_config` -- what identifies the configuration beyond the options.

Scores other than q·kᵀ (PaTH) or weights other than softmax (stick-breaking) are no hook: the encoding names an
attention kernel of its own (:attr:`~PositionalEncoding.kernel`, :mod:`pebench.models.kernels`), which composes them
with the biases through :func:`pebench.models.kernels.blocked`.

The order of operations, on every attention path (SDPA, dense, blocked, by rows, packed seeds, the inspected maps):

    q, k = transform_qk(q, k, positions, layer[, state=s][, hidden=x])    (state, then positions, then hidden states)
    mask = (attn_bias(q, k, positions, layer) + causal) [+ attn_bias(q, k, positions, layer, hidden=x)]
    out  = softmax(q·kᵀ · attn_scale + mask) · [v | state_values(s, layer)]    (a kernel's own scores or weights)

The bias comes from (at most) two calls, added in that order: without ``hidden``, the part from positions and q, k
(by blocks of rows with ``rows=``); with ``hidden=x``, only for a class whose override names ``hidden``, the part from
the hidden states (by rows from ``per_key=True``'s vector when there is one). Capabilities and defaults are class
attributes, never name lists, each documented where :class:`PositionalEncoding` declares it; those that only say a
role is implemented are derived from the class's override, never declared (:data:`DERIVED_CAPABILITIES`); a class
defining a hook of the former contract is refused when it is defined (:data:`RETIRED_HOOKS`). A bias that depends
only on the positions can be kept between calls with :class:`PositionMemo`. A :class:`Wrapper` forwards every hook,
with its keywords, to the encoding it wraps (``self.inner``), whose derived capabilities it has, and overrides only
what it changes; any position-indexed encoding that is not itself a wrapper can be wrapped (randomized positions,
DroPE), see :func:`pebench.encodings.registry.wrappable`.

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

import functools
import inspect
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


@dataclass(frozen=True, eq=False)
class RowBlock:
    """A block of query rows ``start .. start + R - 1`` against keys ``0 .. S - 1`` (``S >= start + R``), as
    :meth:`PositionalEncoding.attn_bias` receives it with ``rows=``: ``scores`` ``(B, H, R, S)`` are those rows'
    scaled scores ``q·kᵀ·attn_scale``."""

    start: int
    scores: Tensor


DERIVED_CAPABILITIES: dict[str, tuple[str, str | None]] = {
    "bias_by_rows": ("attn_bias", "rows"),
    "reads_hidden": ("attn_bias", "hidden"),
    "per_key_bias": ("attn_bias", "per_key"),
    "qk_from_hidden": ("transform_qk", "hidden"),
    "qk_with_state": ("transform_qk", "state"),
    "carries_state": ("init_state", None),
}
"""Capability -> (hook, keyword): each is read (on a class or an instance) as whether the class overrides that hook of
:class:`PositionalEncoding` with a signature naming the keyword (None: any override), never declared
(:func:`derived`); the model passes a keyword only to a class with its capability. A class that assigns one is refused
when it is defined. A :class:`Wrapper` instance's are its inner encoding's."""

RETIRED_HOOKS: dict[str, str] = {
    "embed_annotations": "embed(positions, annotations=None, generator=None), with needs",
    "transform_qk_from_hidden": "transform_qk(q, k, positions, layer, *, hidden)",
    "transform_qk_with_state": "transform_qk(q, k, positions, layer, *, state)",
    "attn_bias_from_hidden": "attn_bias(q, k, positions, layer, *, hidden)",
    "attn_bias_rows": "attn_bias(q, k, positions, layer, *, rows), rows a RowBlock(start, scores)",
    "key_bias_from_hidden": "attn_bias(q, k, positions, layer, *, hidden, per_key)",
    "attention_scores": "an attention kernel, kernel = NAME (pebench.models.kernels.blocked(call, raw=scores))",
    "attention_weights": "an attention kernel, kernel = NAME (pebench.models.kernels.blocked(call, weights=fn))",
    "train_positions": "positions(batch_size, length, generator, train)",
    "eval_positions": "positions(batch_size, length, generator, train)",
}
"""Hook of the former contract -> the role (and keyword) that replaced it: a class defining one is a one-line
``TypeError`` when it is defined."""


def overrides(cls: type, hook: str) -> bool:
    """Whether class ``cls`` defines ``hook`` other than :class:`PositionalEncoding`'s (its own or inherited)."""
    return getattr(cls, hook) is not getattr(PositionalEncoding, hook)


@functools.cache
def names(cls: type, hook: str, keyword: str | None) -> bool:
    """Whether class ``cls`` overrides ``hook`` with a signature naming ``keyword`` (a parameter of that name, not
    ``**kwargs``; None: any override); cached per class."""
    if not overrides(cls, hook):
        return False
    param = None if keyword is None else inspect.signature(getattr(cls, hook)).parameters.get(keyword)
    return keyword is None or param is not None and param.kind in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY)


def derived(cls: type, capability: str) -> bool:
    """Capability ``capability`` of :data:`DERIVED_CAPABILITIES` on class ``cls`` (:func:`names`)."""
    return names(cls, *DERIVED_CAPABILITIES[capability])


class _Derived:
    """A capability of :data:`DERIVED_CAPABILITIES`: read-only, on the class and on an instance alike, from the class's
    override (the class's, not an instance's: hooks patched on an instance change nothing)."""

    def __init__(self, doc: str) -> None:
        self.__doc__ = doc

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: object, owner: type | None = None) -> bool:
        return derived(owner if owner is not None else type(obj), self.name)

    def __set__(self, obj: object, value: object) -> None:
        raise AttributeError(f"{self.name} is derived from the class's hooks (DERIVED_CAPABILITIES); it cannot be set")


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
    kernel does (its own scores or weights) registers its own (:func:`pebench.models.kernels.register_kernel`) in its
    own file and names it."""
    needs: ClassVar[frozenset[str]] = frozenset()
    """Names of the task annotations (:data:`pebench.tasks.base.ANNOTATIONS`) that :meth:`embed` reads; empty: none
    (the model passes it none). Runs only on tasks whose :attr:`pebench.tasks.base.Task.annotations` include them
    all."""

    # -- capabilities derived from the class's overrides (never declared: see :data:`DERIVED_CAPABILITIES`) --------
    bias_by_rows = _Derived("""Whether the class's :meth:`attn_bias` names ``rows``: the bias of a block of query rows
    comes from those rows' scaled scores (CoPE's), so the model builds it block by block inside its blocked attention
    (CPU, packed seeds) from the scores it computes anyway; elsewhere the whole bias, which must give the same.""")
    reads_hidden = _Derived("""Whether the class's :meth:`attn_bias` names ``hidden``: the encoding adds a bias
    computed from the hidden states entering each layer's attention (content-dependent gates, as FoX's).""")
    per_key_bias = _Derived("""Whether the class's :meth:`attn_bias` names ``per_key``: its bias from the hidden states
    also comes as a per-key vector (FoX's, CABLE's).""")
    qk_from_hidden = _Derived("""Whether the class's :meth:`transform_qk` names ``hidden``: q and k are transformed by
    a function of the hidden states entering each layer's attention (CARoPE's phases).""")
    qk_with_state = _Derived("""Whether the class's :meth:`transform_qk` names ``state``: q and k are transformed with
    the state entering the layer (TAPE's features), with :attr:`carries_state`.""")
    carries_state = _Derived("""Whether the class overrides :meth:`init_state`: a state carried from layer to layer
    (TAPE's features), with :meth:`update_state` (and :meth:`transform_qk`'s ``state``, :meth:`state_values` when
    used; the conformance kit checks they go together).""")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name, (hook, keyword) in DERIVED_CAPABILITIES.items():
            if name in vars(cls):
                raise TypeError(f"encoding class {cls.__qualname__} declares {name}: that capability is now derived "
                                f"from its {hook}{f' naming {keyword}' if keyword else ''}; remove the declaration")
        for old, new in RETIRED_HOOKS.items():
            if old in vars(cls):
                raise TypeError(f"encoding class {cls.__qualname__} defines {old}, a hook of the former contract; "
                                f"implement instead: {new} (docs/extending.md)")  # fmt: skip

    def __init__(self, ctx: EncodingContext, **options: Any) -> None:
        super().__init__()
        self.ctx = ctx
        self.opts: dict[str, Any] = resolve(f"encoding {self.name}", self.options, options)

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
        bias by rows or from the hidden states, ``fused`` otherwise."""
        if self.kernel:
            return self.kernel
        return "rows" if self.bias_by_rows or self.reads_hidden else "fused"

    # -- the hooks ---------------------------------------------------------------------------------------------
    def embed(self, positions: Tensor, annotations: Mapping[str, Tensor] | None = None,
              generator: torch.Generator | None = None) -> Tensor | None:  # fmt: skip
        """Vector added to the token embeddings: ``(T, d_model)`` or ``(B, T, d_model)``; None for no addition.

        Only for an encoding with :attr:`needs` the model passes ``annotations``, name -> ``(B, T)`` int64 (every name
        of :attr:`needs` is there), and ``generator``, the trainer's positions generator in training, for random
        training offsets, None at evaluation (no randomness); it then adds the returned ``(B, T, d_model)`` vector
        without ever scaling the tokens by ``scale_embeddings`` (:class:`pebench.models.ModelConfig`), which it does
        before adding any other encoding's vector."""
        return None

    def transform_qk(self, q: Tensor, k: Tensor, positions: Tensor, layer: int, *, hidden: Tensor | None = None,
                     state: Tensor | None = None) -> tuple[Tensor, Tensor]:  # fmt: skip
        """Return transformed (q, k) of shape ``(B, H, T, qk_dim)``. Only to a class whose override names them the
        model passes ``hidden`` ``(B, T, d_model)``, the hidden states entering layer ``layer``'s attention (after its
        norm, the input of its q, k, v projections; position t may read them only at positions <= t), and ``state``,
        the state entering the layer (:attr:`carries_state`). An override reading several applies the state's
        transform first, then the positions', then the hidden states'."""
        return q, k

    def attn_bias(self, q: Tensor, k: Tensor, positions: Tensor, layer: int, *, hidden: Tensor | None = None,
                  rows: RowBlock | None = None, per_key: bool = False) -> Tensor | None:  # fmt: skip
        """Additive bias on the scaled scores, ``(H, T, T)`` or ``(B, H, T, T)`` (or broadcastable to it); None for no
        bias. Entries of keys after a query are masked by the model whatever they hold. Keywords, each passed only to a
        class whose override names it (the module docstring says in which calls):

        * ``rows``: the bias of query rows ``rows.start .. rows.start + R - 1`` only (``q`` ``(B, H, R, qk_dim)`` their
          queries, ``k`` ``(B, H, S, qk_dim)`` the keys, ``rows.scores`` their scaled scores): ``(B, H, R, S)`` (or
          broadcastable to it), equal to the same block of the whole bias;
        * ``hidden``: instead, only the part from the hidden states ``(B, T, d_model)`` entering the layer's attention
          (the call without it gives the rest: None for a bias from them alone), added after it, in every layer;
        * ``per_key`` (with ``hidden``): optional, that bias as a per-key ``b`` ``(B, H, T)`` such that
          ``bias[..., i, j] - b[..., j]`` is the same for every visible key ``j <= i`` of a row ``i`` (a bias
          ``c_i - c_j`` gives ``b_j = -c_j``); None: no such form. Softmax ignores a constant per row, so the model
          builds the bias of a block of rows as ``b_j - b_i`` where that pays (its blocked attention: CPU and packed
          seeds, in training; FoX at seq 256: 0.42x -> 0.7x of HF Llama's step throughput) and never with weights
          other than softmax."""
        return None

    def init_state(self, positions: Tensor, batch_size: int) -> Tensor:
        """Only with :attr:`carries_state`: the state entering the first layer, once per forward pass, from
        ``positions`` ``(T,)`` or ``(B, T)``; a tensor whose first dimension is ``batch_size`` or 1 (broadcast)."""
        raise NotImplementedError(f"encoding {self.name} carries no state")

    def state_values(self, state: Tensor, layer: int) -> Tensor | None:
        """Only with :attr:`carries_state`: channels ``s`` ``(B or 1, H, T, w)`` of the state entering layer ``layer``
        that the layer's attention mixes with its own weights ``a`` (a kernel's own included): appended to v,
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

    def positions(self, batch_size: int, length: int, generator: torch.Generator | None, train: bool
                  ) -> Tensor | None:  # fmt: skip
        """Positions of one training (``train``) or evaluation batch, ``(T,)`` or ``(B, T)``, drawn from ``generator``
        (the trainer's positions generator; at evaluation, one seeded by the evaluation, so the same seed gives the
        same positions); at evaluation None too: ``0..length-1`` shared by the batch. Default: those, as
        ``torch.arange(length)`` in training."""
        return torch.arange(length) if train else None

    def extra_config(self) -> dict[str, Any]:
        """Anything beyond the options that identifies this encoding's configuration (stored with results)."""
        return {}


class _Inner:
    """An attribute of a :class:`Wrapper` that is its inner encoding's on an instance, read-only; on the class, the
    base's default (wrappers wrap only encodings that need no annotations, :func:`pebench.encodings.registry.
    wrappable`)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.__doc__ = f"The wrapped encoding's ``{name}``."

    def __get__(self, obj: Wrapper | None, owner: type | None = None) -> Any:
        return getattr(PositionalEncoding, self.name) if obj is None else getattr(obj.inner, self.name)

    def __set__(self, obj: object, value: object) -> None:
        raise AttributeError(f"a wrapper's {self.name} is its inner encoding's; it cannot be set")


class Wrapper(PositionalEncoding):
    """An encoding built around another one, ``self.inner`` (set by the subclass's ``__init__``): every hook and
    property of :class:`PositionalEncoding` (its keywords passed on) and every capability of
    :data:`DERIVED_CAPABILITIES` is the inner encoding's (attached to the class below, so a hook or a capability added
    to the base class is forwarded with no change here), and so are the declarations about what the hooks compute
    (its annotations, attention kernel, packing and bias sharing); a wrapper overrides only what it changes, an
    overriding hook taking ``**kwargs`` and passing them on. The others are its own: a wrapper is not position-free,
    is not position-indexed unless it says so, and names its own family and default depth."""

    inner: PositionalEncoding
    needs = _Inner("needs")  # type: ignore[assignment]
    kernel = _Inner("kernel")  # type: ignore[assignment]
    packable = _Inner("packable")  # type: ignore[assignment]
    bias_shared_by_layers = _Inner("bias_shared_by_layers")  # type: ignore[assignment]


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
for _name in DERIVED_CAPABILITIES:
    setattr(Wrapper, _name, _Inner(_name))


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
