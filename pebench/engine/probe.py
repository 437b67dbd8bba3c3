"""The position probe of the mechanism diagnostics (issue 89; docs/diagnostics.md): how well a linear read-out of a
model's hidden states decodes each token's absolute position, at the training length and past it.

After Kazemnejad et al. 2023, "The Impact of Positional Encoding on Length Generalization in Transformers",
arXiv:2305.19466, Sec. 5: NoPE can represent absolute position in its first layer through causal attention alone;
an absolute encoding's positions past the training length are rows it never trained. The probe asks whether the
first block's output encodes position where the model was trained (cross-validated at the training length) and
whether the read-out fitted there still counts at longer lengths (its R² on the longer sequences).

A ridge regression in float64, closed form. Its constant is chosen from :data:`RIDGES` by cross-validation over whole
sequences (:func:`cross_validated`): the tokens of one sequence share its content, so leaving out single tokens
would score a probe on rows it has nearly seen. With few sequences and ``d_model`` features a nearly unpenalised probe
fits the content as well as the position and scores far below 0 on held-out sequences (on the reference's models with
8 sequences: -3 to -15 at the training length for relative encodings, whose first block carries no linear position);
the chosen constant takes such a probe to about 0, "not decodable", and leaves a decodable one near its best fit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import torch
from torch import Tensor

__all__ = ["FOLDS", "RIDGE", "RIDGES", "Probe", "cross_validated", "fit_probe", "position_probe", "probe_r2"]

RIDGE = 1e-3
"""The ridge constant of :func:`fit_probe` when none is given, relative to the mean eigenvalue of the centred Gram
matrix (so the same for hidden states of any size): λ = RIDGE · tr(X_cᵀX_c) / D."""
RIDGES = tuple(10.0**k for k in range(-3, 4))
"""The relative ridge constants :func:`cross_validated` chooses from: 10⁻³ (almost least squares) to 10³ (almost the
mean position everywhere)."""
FOLDS = 8
"""The folds of :func:`cross_validated`: contiguous groups of whole sequences."""


class Probe(NamedTuple):
    """A linear probe ``ŷ = X w + b`` of absolute position (:func:`fit_probe`), float64."""

    w: Tensor
    b: Tensor


def _flat(hidden: Tensor) -> tuple[Tensor, Tensor]:
    """Hidden states ``(B, T, D)`` as ``(B·T, D)`` float64 rows and their positions ``0..T-1`` repeated per sequence."""
    if hidden.dim() != 3:
        raise ValueError(f"hidden states must be (B, T, D), got {tuple(hidden.shape)}")
    b, t, d = hidden.shape
    x = hidden.detach().double().reshape(b * t, d)
    y = torch.arange(t, dtype=torch.float64, device=hidden.device).repeat(b)
    return x, y


def _lambda(gram: Tensor, ridge: float) -> float:
    """``λ = ridge · tr(X_cᵀX_c) / D`` (``ridge`` itself when the trace is 0)."""
    return ridge * float(gram.trace()) / gram.shape[0] or ridge


def _solve(x: Tensor, y: Tensor, ridge: float) -> Probe:
    """Ridge regression of ``y`` on the rows ``x``, the intercept unpenalised (:func:`fit_probe`'s formula)."""
    mx, my = x.mean(0), y.mean()
    xc = x - mx
    gram = xc.T @ xc
    eye = torch.eye(gram.shape[0], dtype=gram.dtype, device=gram.device)
    w = torch.linalg.solve(gram + _lambda(gram, ridge) * eye, xc.T @ (y - my))
    return Probe(w, my - mx @ w)


def fit_probe(hidden: Tensor, ridge: float = RIDGE) -> Probe:
    """The ridge regression of each token's position ``0..T-1`` on its hidden state ``(B, T, D)``, closed form in
    float64 (after Kazemnejad et al. 2023, arXiv:2305.19466, who probe NoPE's hidden states for absolute position).

    With ``X`` the ``(B·T, D)`` hidden states and ``y`` the positions, centred (``X_c``, ``y_c``; the intercept is not
    penalised): ``w = (X_cᵀX_c + λI)⁻¹ X_cᵀy_c``, ``λ = ridge · tr(X_cᵀX_c) / D``, ``b = ȳ - x̄ᵀw``."""
    return _solve(*_flat(hidden), ridge)


def _r2(y: Tensor, pred: Tensor) -> float:
    total = float((y - y.mean()).square().sum())
    return 1.0 - float((y - pred).square().sum()) / total if total > 0 else math.nan


def probe_r2(probe: Probe, hidden: Tensor) -> float:
    """The coefficient of determination of ``probe`` on hidden states ``(B, T, D)``, targets their positions
    ``0..T-1``: ``R² = 1 - Σ(y - ŷ)² / Σ(y - ȳ)²``, ``ȳ`` the mean position at this length. Past the length the probe
    was fitted at, the targets exceed every position it saw: R² then measures its extrapolation (1 only if the
    representation keeps counting linearly; it can be negative). NaN for ``T = 1``."""
    x, y = _flat(hidden)
    return _r2(y, x @ probe.w.to(x.device) + probe.b.to(x.device))


class _Moments(NamedTuple):
    """Sums over a set of rows: count, Σx, Σy, ΣxxᵀΣ, Σxy (float64), from which the probe of any union of sets is
    solved without reading its rows again."""

    n: int
    sx: Tensor
    sy: Tensor
    sxx: Tensor
    sxy: Tensor

    @classmethod
    def of(cls, x: Tensor, y: Tensor) -> _Moments:
        return cls(x.shape[0], x.sum(0), y.sum(), x.T @ x, x.T @ y)

    def without(self, part: _Moments) -> _Moments:
        """The sums over these rows less ``part``'s (a subset of them)."""
        return _Moments(*(a - b for a, b in zip(self, part, strict=True)))

    def probes(self, ridges: Sequence[float]) -> list[Probe]:
        """:func:`fit_probe`'s probe of these rows at each constant: the centred Gram matrix
        ``X_cᵀX_c = Σxxᵀ - n x̄x̄ᵀ`` diagonalised once, ``w = V (Vᵀ X_cᵀy_c / (e + λ))``."""
        mx, my = self.sx / self.n, self.sy / self.n
        gram = self.sxx - self.n * torch.outer(mx, mx)
        evals, vecs = torch.linalg.eigh(gram)
        vc = vecs.T @ (self.sxy - self.n * mx * my)
        out = []
        for ridge in ridges:
            w = vecs @ (vc / (evals + _lambda(gram, ridge)))
            out.append(Probe(w, my - mx @ w))
        return out


def cross_validated(hidden: Tensor, ridges: Sequence[float] = RIDGES, folds: int = FOLDS) -> tuple[float, float]:
    """The ridge constant of ``ridges`` whose probe decodes held-out sequences best, and that R²: the ``B`` sequences
    of ``hidden`` ``(B, T, D)`` in ``K = min(folds, B)`` contiguous groups; each group's positions predicted by the
    probe fitted on the other groups (:func:`fit_probe`'s formula), the predictions pooled,
    ``R²_cv(λ) = 1 - Σ(y - ŷ_out)² / Σ(y - ȳ)²``; the largest wins (the smallest constant among equals). Needs
    ``B >= 2``."""
    b = hidden.shape[0]
    if b < 2:
        raise ValueError(f"cross-validation needs at least 2 sequences, got {b}")
    k = min(folds, b)
    group = torch.arange(b) * k // b
    parts = [_flat(hidden[group == g]) for g in range(k)]
    moments = [_Moments.of(x, y) for x, y in parts]
    total = _Moments(*(sum(field) for field in zip(*moments, strict=True)))
    preds: list[list[Tensor]] = [[] for _ in ridges]
    for (x_out, _), m in zip(parts, moments, strict=True):
        for i, probe in enumerate(total.without(m).probes(ridges)):
            preds[i].append(x_out @ probe.w + probe.b)
    y = torch.cat([part[1] for part in parts])
    scores = [_r2(y, torch.cat(p)) for p in preds]
    best = max(range(len(scores)), key=lambda i: (scores[i], -i))
    return ridges[best], scores[best]


def position_probe(train_hidden: Tensor, hidden_by_length: Mapping[int, Tensor], ridges: Sequence[float] = RIDGES,
                   folds: int = FOLDS) -> dict[int, float]:  # fmt: skip
    """The probe's R² at the training length ``T`` (``train_hidden``'s, ``(B, T, D)``) and at every other length of
    ``hidden_by_length``: at ``T`` the cross-validated R² of the chosen constant (:func:`cross_validated`); elsewhere
    :func:`probe_r2` of the probe fitted on all of ``train_hidden`` with that constant. One sequence: no
    cross-validation, the probe of :data:`RIDGE` scored in-sample at ``T``."""
    if train_hidden.shape[0] >= 2:
        ridge, at_train = cross_validated(train_hidden, ridges, folds)
        probe = fit_probe(train_hidden, ridge)
    else:
        probe = fit_probe(train_hidden)
        at_train = probe_r2(probe, train_hidden)
    length = train_hidden.shape[1]
    out = {n: probe_r2(probe, hidden) for n, hidden in hidden_by_length.items() if n != length}
    return {length: at_train, **out}
