"""The shapes and dtypes an encoding's hooks return, checked where the model calls them: every hook of the encoding
(:mod:`pebench.encodings.base`) is wrapped for one forward pass on the evaluation route and one on the training route
of a small batch, each variant (a keyword such as ``attn_bias``'s ``hidden``) by its own rule, and the positions hook
is called once for training and once for evaluation; the first value of a wrong shape or dtype stops the pass
with one line naming the encoding's source (the plugin file), the hook, what it returned and what was expected --
instead of a size mismatch deep inside the model's attention.

The conformance kit's ``hook shapes`` property (:mod:`pebench.testing.encoding`) and the suite's preflight for a
plugin's encodings (:mod:`pebench.suite.preflight`) both use :func:`check_hook_shapes`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch import Tensor

from pebench.encodings.base import PositionalEncoding
from pebench.errors import PebenchError
from pebench.models import Transformer
from pebench.tasks.base import Batch


class HookShapeError(PebenchError):
    """A hook of an encoding returned a value of the wrong shape or dtype (one line: source, hook, expected)."""

    def __init__(self, message: str, hook: str) -> None:
        super().__init__(message)
        self.hook = hook


def _shape(shape: Any) -> str:
    return "(" + ", ".join(str(int(s)) for s in shape) + ")"


def _fits(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """Whether ``shape`` broadcasts to ``target`` (without growing it)."""
    if len(shape) > len(target):
        return False
    try:
        return tuple(torch.broadcast_shapes(shape, target)) == target
    except RuntimeError:
        return False


Rule = Callable[[tuple[Any, ...], dict[str, Any], Any, PositionalEncoding, int], "str | None"]
"""``rule(args, keywords, returned, encoding, batch_size)``: None when ``returned`` is right, else what was expected."""


def _tensor(value: Any, ok: bool, expected: str, floating: bool = True, dtype: torch.dtype | None = None) -> str | None:
    """``expected`` (with the dtype asked for) unless ``value`` is a tensor, ``ok`` and of the right dtype."""
    want = f"{expected}, {dtype}" if dtype is not None else (f"{expected}, a floating dtype" if floating else expected)
    if not isinstance(value, Tensor) or not ok:
        return want
    if (dtype is not None and value.dtype != dtype) or (floating and not value.is_floating_point()):
        return want
    return None


def _qk(args: tuple[Any, ...], kw: dict[str, Any], out: Any, enc: PositionalEncoding, b: int) -> str | None:
    q, k = args[0], args[1]
    want_q, want_k = (*q.shape[:-1], enc.qk_dim), (*k.shape[:-1], enc.qk_dim)
    expected = f"a pair (q, k) of {_shape(want_q)} and {_shape(want_k)} (B, H, T, qk_dim), {q.dtype}"
    if not (isinstance(out, tuple) and len(out) == 2 and all(isinstance(t, Tensor) for t in out)):
        return expected
    ok = tuple(out[0].shape) == want_q and tuple(out[1].shape) == want_k
    return None if ok and out[0].dtype == q.dtype and out[1].dtype == k.dtype else expected


def _bias(args: tuple[Any, ...], kw: dict[str, Any], out: Any, enc: PositionalEncoding, b: int) -> str | None:
    q, k = args[0], args[1]
    h, tq, tk = q.shape[-3], q.shape[-2], k.shape[-2]
    if out is None:
        return None
    ok = isinstance(out, Tensor) and out.dim() >= 2 and tuple(out.shape[-2:]) == (tq, tk) and \
        _fits(tuple(out.shape), (q.shape[0], h, tq, tk))  # fmt: skip
    return _tensor(out, ok, f"None, (H, T, T) = {_shape((h, tq, tk))} or (B, H, T, T) = "
                            f"{_shape((q.shape[0], h, tq, tk))} (or broadcastable to it)")  # fmt: skip


def _hidden_bias(args: tuple[Any, ...], kw: dict[str, Any], out: Any, enc: PositionalEncoding, b: int) -> str | None:
    x = kw["hidden"]
    want = (x.shape[0], enc.ctx.n_heads, x.shape[1], x.shape[1])
    if out is None:
        return None
    ok = isinstance(out, Tensor) and out.dim() >= 2 and tuple(out.shape[-2:]) == want[-2:] and \
        _fits(tuple(out.shape), want)  # fmt: skip
    return _tensor(out, ok, f"None or (B, H, T, T) = {_shape(want)} (or broadcastable to it)")


def _key_bias(args: tuple[Any, ...], kw: dict[str, Any], out: Any, enc: PositionalEncoding, b: int) -> str | None:
    x = kw["hidden"]
    want = (x.shape[0], enc.ctx.n_heads, x.shape[1])
    if out is None:
        return None
    ok = isinstance(out, Tensor) and out.dim() >= 1 and out.shape[-1] == want[-1] and _fits(tuple(out.shape), want)
    return _tensor(out, ok, f"None or (B, H, T) = {_shape(want)}")


def _rows(args: tuple[Any, ...], kw: dict[str, Any], out: Any, enc: PositionalEncoding, b: int) -> str | None:
    scores = kw["rows"].scores
    ok = isinstance(out, Tensor) and _fits(tuple(out.shape), tuple(scores.shape))
    return _tensor(out, ok, f"(B, H, R, S) = {_shape(scores.shape)} (or broadcastable to it)")


def _embed(args: tuple[Any, ...], kw: dict[str, Any], out: Any, enc: PositionalEncoding, b: int) -> str | None:
    positions = args[0]
    t, d = positions.shape[-1], enc.ctx.d_model
    rows = positions.shape[0] if positions.dim() == 2 else b
    if out is None:
        return None
    ok = isinstance(out, Tensor) and (tuple(out.shape) == (t, d) or (out.dim() == 3 and tuple(out.shape[1:]) == (t, d)
                                                                     and out.shape[0] in (1, rows)))  # fmt: skip
    return _tensor(out, ok, f"None, (T, d_model) = {_shape((t, d))} or (B, T, d_model) = {_shape((rows, t, d))}")


def _annotations(args: tuple[Any, ...], kw: dict[str, Any], out: Any, enc: PositionalEncoding, b: int) -> str | None:
    notes: Mapping[str, Tensor] = kw["annotations"]
    shape = next(iter(notes.values())).shape if notes else (b, 0)
    want = (*shape, enc.ctx.d_model)
    if out is None:
        return None
    ok = isinstance(out, Tensor) and tuple(out.shape) == want
    return _tensor(out, ok, f"None or (B, T, d_model) = {_shape(want)}")


def _positions(optional: bool) -> Rule:
    def rule(args: tuple[Any, ...], kw: dict[str, Any], out: Any, enc: PositionalEncoding, b: int) -> str | None:
        batch, length = args[0], args[1]
        if out is None and optional:
            return None
        ok = isinstance(out, Tensor) and tuple(out.shape) in ((length,), (batch, length))
        return _tensor(out, ok, f"{'None, ' if optional else ''}(T,) = ({length},) or (B, T) = "
                                f"{_shape((batch, length))}", floating=False)  # fmt: skip

    return rule


def _init_state(args: tuple[Any, ...], kw: dict[str, Any], out: Any, enc: PositionalEncoding, b: int) -> str | None:
    batch = args[1]
    ok = isinstance(out, Tensor) and out.dim() >= 1 and out.shape[0] in (1, batch)
    return _tensor(out, ok, f"a tensor whose first dimension is the batch, {batch}, or 1", floating=False)


def _state_values(args: tuple[Any, ...], kw: dict[str, Any], out: Any, enc: PositionalEncoding, b: int
                  ) -> str | None:  # fmt: skip
    if out is None:
        return None
    ok = isinstance(out, Tensor) and out.dim() == 4 and out.shape[1] == enc.ctx.n_heads
    return _tensor(out, ok, f"None or (B or 1, H, T, w) with H = {enc.ctx.n_heads}")


def _update_state(args: tuple[Any, ...], kw: dict[str, Any], out: Any, enc: PositionalEncoding, b: int
                  ) -> str | None:  # fmt: skip
    rest = tuple(args[0].shape[1:])
    ok = isinstance(out, Tensor) and tuple(out.shape[1:]) == rest and out.shape[0] in (1, b)
    return _tensor(out, ok, f"the state's shape (B or 1, {', '.join(map(str, rest))})", floating=False)


RULES: dict[str, Rule] = {
    "embed": _embed,
    "embed(annotations)": _annotations,
    "transform_qk": _qk,
    "attn_bias": _bias,
    "attn_bias(rows)": _rows,
    "attn_bias(hidden)": _hidden_bias,
    "attn_bias(hidden, per_key)": _key_bias,
    "init_state": _init_state,
    "state_values": _state_values,
    "update_state": _update_state,
    "positions(train)": _positions(optional=False),
    "positions(eval)": _positions(optional=True),
}
"""A hook, with the keyword that selects its variant -> the rule its returned value must follow (the shapes of
:mod:`pebench.encodings.base`'s docstrings)."""

HOOKS = tuple(dict.fromkeys(role.split("(")[0] for role in RULES))
"""The hooks whose returned values are checked."""


def role(hook: str, args: tuple[Any, ...], kw: dict[str, Any]) -> str:
    """The entry of :data:`RULES` of a call of ``hook``: the hook, with the keyword that selects its variant."""
    if hook == "positions":
        return "positions(train)" if kw.get("train", args[3] if len(args) > 3 else False) else "positions(eval)"
    if hook == "embed" and kw.get("annotations") is not None:
        return "embed(annotations)"
    if hook == "attn_bias":
        if kw.get("rows") is not None:
            return "attn_bias(rows)"
        if kw.get("hidden") is not None:
            return "attn_bias(hidden, per_key)" if kw.get("per_key") else "attn_bias(hidden)"
    return hook


def _got(value: Any) -> str:
    if isinstance(value, Tensor):
        return f"{_shape(value.shape)} {value.dtype}"
    if isinstance(value, tuple):
        return "(" + ", ".join(_got(v) for v in value) + ")"
    return type(value).__name__


def check_hook_shapes(model: Transformer, batch: Batch, source: str) -> list[str]:
    """Run ``model`` on ``batch`` on the evaluation and the training route with every hook of its encoding checked
    (:data:`RULES`), and call its positions hook once for training and once for evaluation; return the hooks (with
    the keyword of their variant, :func:`role`) that were called, in order. The first wrong
    value raises :class:`HookShapeError`: ``plugin /x/my_pe.py: encoding my_pe: attn_bias returned (16, 16)
    torch.float32; expected ...``."""
    enc = model.encoding
    b, t = batch.inputs.shape
    called: list[str] = []

    def checked(hook: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            out = fn(*args, **kwargs)
            name = role(hook, args, kwargs)
            expected = RULES[name](args, kwargs, out, enc, b)
            if expected is not None:
                raise HookShapeError(f"{source}: encoding {enc.name}: {name} returned {_got(out)}; expected "
                                     f"{expected}", name)  # fmt: skip
            if name not in called:
                called.append(name)
            return out

        return run

    for hook in HOOKS:
        object.__setattr__(enc, hook, checked(hook, getattr(enc, hook)))
    try:
        enc.positions(b, t, torch.Generator().manual_seed(0), train=True)
        enc.positions(b, t, torch.Generator().manual_seed(0), train=False)
        for training in (False, True):
            model.train(training)
            with torch.set_grad_enabled(training):
                model(batch.inputs, batch.positions, batch.annotations)
    finally:
        for hook in HOOKS:
            object.__delattr__(enc, hook)
        model.eval()
    return called
