"""Scalable-Softmax, SSMax (Nakanishi, "Scalable-Softmax Is Superior for Attention", 2025, arXiv:2501.19399, §2):
softmax with the input multiplied by s·log n, n the size of its input vector. A wrapper over a base encoding ``X``,
named ``ssmax_X``.

Softmax maps z ∈ R^n to e^{z_i} / Σ_j e^{z_j}; its largest output goes to 0 as n grows for bounded inputs, so an
attention row over many keys flattens ("attention fading", the paper's Figure 1). SSMax (§2) is

    SSMax(z)_i = n^{s·z_i} / Σ_{j=1..n} n^{s·z_j} = softmax((s·log n)·z)_i,

with s a learned scalar, one per layer and head. Under a causal mask query row i (0-based) sees the keys 0 .. i, so
its softmax has n = i + 1 inputs: the factor is s·log(i + 1), one per query row, read from the row's index in the
sequence, never from the positions the base encoding is given (random positions change nothing here). The first row
(n = 1, factor 0) has one key and weight 1 whatever its factor. The paper's derivation (§3) fitted
softmax((s·p_n + b)·z) with p_n learned per n and found p_n close to a·log n + c, and it also trains a variant with a
learned bias b per layer and head, softmax((s·log n + b)·z): option ``bias`` (b starts at 0 here, so the variant
starts as plain SSMax). Multiplying each query by s·log n is the same as multiplying its logits.

How it plugs in. z is the whole input of the softmax: the scaled scores q·k·attn_scale **plus the base's bias**
(ALiBi's, T5's, FoX's ...). So the wrapper multiplies row i of both by the same factor f_i: the query of row i in
:meth:`~pebench.encodings.base.PositionalEncoding.transform_qk` (after the base's own transform; k is left alone)
and row i of both parts of the bias from :meth:`~pebench.encodings.base.PositionalEncoding.attn_bias` (the one from
positions and q, k, and the one from the hidden states). For a base without a bias (RoPE, NoPE) scaling q is all of
it. The factor differs per layer (s is), so a base bias shared by the layers is no longer shared
(``bias_shared_by_layers`` is False), and a per-key bias (FoX's, ``per_key=True``) has no per-key form once its rows
are scaled (None: the model builds the full bias). No new hook is needed.

Which bases. Any registered encoding that is not a wrapper, needs no task annotations, keeps softmax (its attention
kernel is one of :data:`pebench.models.kernels.SOFTMAX_KERNELS`: stick-breaking's is no softmax to scale) and whose bias
does not read the scores (not ``bias_by_rows``: CoPE's gates σ(q·k) would see the scaled queries): :func:`ssmax_bases`.
Unlike ``randomized_X`` the base need not be position-indexed (``ssmax_nope`` is SSMax on a model without positions).
The wrapper takes the base's ``position_indexed``, ``position_free`` (a row's scale reads only how many keys the causal
mask leaves it, so the keys stay a set) and ``default_layers`` (``ssmax_nope`` has NoPE's 6 blocks unless ``--layers``).
``ssmax_rope`` and ``ssmax_nope`` are registered (they are in the suite: the paper's models use RoPE, and Llama 4
applies its temperature to its NoPE layers, see :mod:`pebench.encodings.irope`); any other ``ssmax_X`` resolves by name
(``--encoding ssmax_alibi``).

Defaults and what could not be pinned down. Only the paper's abstract and Figure 1 caption were reachable here;
§2's formula and §3's fitted form and bias variant are taken from secondary summaries of the paper, and
their section numbers are not checked against the text. ``s_init`` = 0.43 is the s of the paper's Figure 1 (the
illustration of attention fading); the initial value of s in the paper's training runs could not be read, so 0.43
is a documented choice, not the paper's stated init (1 / log L makes the factor 1 at n = L). b's initial value is
likewise not the paper's stated one. The per-query n = i + 1 is the causal reading of "the input vector size" (each
query's softmax runs over the keys it sees; Llama 4's temperature in Hugging Face's ``modeling_llama4.py``, which
cites this paper, is per query position too).
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from torch import Tensor, nn

from pebench.encodings import nope, rope  # noqa: F401  (registered before they are wrapped below)
from pebench.encodings.base import EncodingContext, PositionalEncoding, Wrapper
from pebench.encodings.registry import available, get, wrapper_family
from pebench.models.kernels import SOFTMAX_KERNELS
from pebench.options import Option

PREFIX = "ssmax_"
REGISTERED = ("rope", "nope")
VERSION = "1"
"""The wrapper's own version, appended to the wrapped encoding's."""
S_INIT = 0.43  # the s of the paper's Figure 1 (see the module docstring)

OPTIONS = {
    "s_init": Option(S_INIT, "initial s of the logit factor s·log n (one learned s per layer and head)", type=float,
                     low=0.0, low_open=True),
    "bias": Option(False, "the bias variant: factor s·log n + b with a learned b per layer and head, from 0",
                   type=bool),
}  # fmt: skip



def ssmax_bases() -> tuple[str, ...]:
    """Registered encodings SSMax may wrap: not wrappers, needing no annotations, with softmax attention and a bias
    that does not read the scores (see the module docstring)."""
    return tuple(n for n in available()
                 if not issubclass(get(n), Wrapper) and not get(n).needs and not get(n).bias_by_rows
                 and (get(n).kernel or "fused") in SOFTMAX_KERNELS)  # fmt: skip


def log_counts(length: int, device: torch.device) -> Tensor:
    """log n for the query rows 0 .. length-1 of causal attention (row i sees n = i + 1 keys): ``(length,)``, in
    torch's default dtype: float32 in the runs, as before, and float64 in the behavioural probe
    (:mod:`pebench.engine.fingerprint`). A float32 ``log`` differs by an ulp between CPU kernels (AVX2 and AVX512),
    which a fixed float32 here carried into the float64 probe: 21x its tolerance on an Intel Xeon against an AMD
    EPYC (tests/data/fingerprints/); the runs compute the same bits as before."""
    return torch.arange(1, length + 1, device=device, dtype=torch.get_default_dtype()).log()


class SSMax(Wrapper):
    """The wrapped encoding with every row of the softmax's input multiplied by s·log n (+ b)."""

    inner_cls: ClassVar[type[PositionalEncoding]]
    paper = "Nakanishi 2025, arXiv:2501.19399"
    family = "wrapper"

    def __init__(self, ctx: EncodingContext, **options: Any) -> None:
        super().__init__(ctx, **options)
        self.inner = self.inner_cls(ctx, **{k: v for k, v in self.opts.items() if k not in OPTIONS})
        self.s = nn.Parameter(torch.full((ctx.n_layers, ctx.n_heads), float(self.opts["s_init"])))
        self.b = nn.Parameter(torch.zeros(ctx.n_layers, ctx.n_heads)) if self.opts["bias"] else None

    @property  # type: ignore[override]
    def bias_shared_by_layers(self) -> bool:  # type: ignore[override]
        return False  # s differs per layer, and so does the scaled bias

    def factor(self, length: int, layer: int, device: torch.device) -> Tensor:
        """The factor of each query row, s·log(i + 1) (+ b), ``(H, length, 1)`` (in float32 in the runs)."""
        f = self.s[layer][:, None] * log_counts(length, device)
        if self.b is not None:
            f = f + self.b[layer][:, None]
        return f[..., None]

    def _scaled(self, bias: Tensor | None, layer: int) -> Tensor | None:
        if bias is None:
            return None
        return bias * self.factor(bias.shape[-2], layer, bias.device).to(bias.dtype)

    def transform_qk(self, q: Tensor, k: Tensor, positions: Tensor, layer: int, **keywords: Any
                     ) -> tuple[Tensor, Tensor]:  # fmt: skip
        """The base's whole transform (with its keywords), then q's rows times their factors."""
        q, k = self.inner.transform_qk(q, k, positions, layer, **keywords)
        return (q * self.factor(q.shape[-2], layer, q.device)).to(q.dtype), k

    def attn_bias(self, q: Tensor, k: Tensor, positions: Tensor, layer: int, **keywords: Any) -> Tensor | None:
        """The base's bias (either part) with its rows times their factors; no per-key form."""
        if keywords.get("per_key"):
            return None  # f_i·(b_j - b_i) is no per-key bias
        return self._scaled(self.inner.attn_bias(q, k, positions, layer, **keywords), layer)

    def extra_config(self) -> dict[str, Any]:
        form = "(s·log n + b)" if self.opts["bias"] else "s·log n"
        return {"ssmax": f"softmax({form}·z), n = i + 1 keys of query row i, s per layer and head",
                **self.inner.extra_config()}  # fmt: skip


ssmax = wrapper_family(PREFIX, SSMax, OPTIONS, REGISTERED, ssmax_bases, lambda inner_cls: {
    "version": f"{inner_cls.version}-s{VERSION}", "position_indexed": inner_cls.position_indexed,
    "position_free": inner_cls.position_free,
    "default_layers": inner_cls.default_layers,
    "description": f"{inner_cls.name} with scalable softmax: row i's softmax input times s·log(i + 1), s learned per "
                   "layer and head",
    "paper": f"Nakanishi 2025, arXiv:2501.19399 (over {inner_cls.paper})"})  # fmt: skip
"""The class ``ssmax_<X>`` of encoding X (made once, then reused)."""
