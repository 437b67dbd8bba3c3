"""A small LLaMA-style decoder-only transformer that hosts any positional encoding through hook points.

Token embedding -> N x [RMSNorm -> causal multi-head attention -> residual, RMSNorm -> SwiGLU -> residual] ->
RMSNorm -> LM head (Touvron et al., "LLaMA", arXiv:2302.13971; RMSNorm: Zhang & Sennrich 2019; SwiGLU: Shazeer 2020).
Each layer's attention runs through the kernel its encoding names (:mod:`pebench.models.kernels`: PyTorch's fused
SDPA or the exact blocked attention of :mod:`pebench.models.attention`). The model never knows which encoding it
hosts: it only calls the hooks of :class:`pebench.encodings.PositionalEncoding`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from pebench.encodings.base import PositionalEncoding
from pebench.models import state as pe_state
from pebench.models.config import ModelConfig
from pebench.models.kernels import AttentionCall, run_kernel


class RMSNorm(nn.Module):
    """x / sqrt(mean(x²) + eps) · g (Zhang & Sennrich 2019)."""

    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: Tensor) -> Tensor:
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight


class SwiGLU(nn.Module):
    """W_down(silu(W_gate x) ⊙ W_up x) (Shazeer 2020, "GLU Variants Improve Transformer")."""

    def __init__(self, d_model: int, hidden: int) -> None:
        super().__init__()
        self.gate = nn.Linear(d_model, hidden, bias=False)
        self.up = nn.Linear(d_model, hidden, bias=False)
        self.down = nn.Linear(hidden, d_model, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        return self.down(F.silu(self.gate(x)) * self.up(x))


class Attention(nn.Module):
    """Causal multi-head attention: the q, k, v projections, the encoding's transforms of q and k (:meth:`call`), the
    kernel the encoding names (:mod:`pebench.models.kernels`), the output projection."""

    def __init__(self, cfg: ModelConfig, layer: int) -> None:
        super().__init__()
        self.n_heads, self.head_dim, self.layer = cfg.n_heads, cfg.head_dim, layer
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model, bias=False)
        self.out = nn.Linear(cfg.d_model, cfg.d_model, bias=False)
        self.dropout = cfg.dropout

    def call(self, x: Tensor, positions: Tensor, pe: PositionalEncoding,
             shared: dict[str, Tensor | None] | None = None, want_weights: bool = False) -> AttentionCall:  # fmt: skip
        """This layer's attention as a kernel receives it: q and k from the projections, transformed by
        :meth:`~pebench.encodings.base.PositionalEncoding.transform_qk` (given the carried state and the hidden states
        where its override names them: :func:`pebench.models.state.qk_keywords`); v with the state's attended channels
        appended (:mod:`pebench.models.state`).
        ``shared`` is one forward pass's scratch space (a bias shared by the layers, a carried state);
        ``want_weights`` asks the kernel for the weights it uses."""
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        # with the state carried from layer to layer (TAPE) or the hidden states (CARoPE) where the hook reads them
        q, k = pe.transform_qk(q, k, positions, self.layer, **pe_state.qk_keywords(pe, x, shared))
        v = pe_state.with_state_values(pe, v, shared, self.layer)
        dropout = self.dropout if self.training else 0.0
        return AttentionCall(q, k, v, x, positions, self.layer, pe, shared, dropout, want_weights)

    def attend(self, x: Tensor, positions: Tensor, pe: PositionalEncoding,
               shared: dict[str, Tensor | None] | None = None, want_weights: bool = False
               ) -> tuple[Tensor, Tensor | None]:  # fmt: skip
        """The layer's attention through the kernel its encoding names (:func:`pebench.models.kernels.run_kernel`): the
        projected output ``(B, T, d_model)`` and, with ``want_weights``, the weights ``(B, H, T, T)`` that kernel used
        (else None); asking for them does not change the output."""
        b, t, d = x.shape
        y, weights = run_kernel(self.call(x, positions, pe, shared, want_weights))
        y = self.out(pe_state.split_state_values(y, self.head_dim, shared).transpose(1, 2).reshape(b, t, d))
        return y, weights

    def forward(
        self, x: Tensor, positions: Tensor, pe: PositionalEncoding, shared: dict[str, Tensor | None] | None = None
    ) -> Tensor:
        """The layer's attention through the kernel its encoding names (:meth:`attend`, no weights)."""
        return self.attend(x, positions, pe, shared)[0]


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig, layer: int) -> None:
        super().__init__()
        self.attn_norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.attn = Attention(cfg, layer)
        self.ffn_norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.ffn = SwiGLU(cfg.d_model, cfg.hidden)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(
        self, x: Tensor, positions: Tensor, pe: PositionalEncoding, shared: dict[str, Tensor | None] | None = None
    ) -> Tensor:
        x = x + self.drop(self.attn(self.attn_norm(x), positions, pe, shared))
        out = self.ffn(self.ffn_norm(x))
        pe_state.update(pe, shared, out, self.attn.layer)  # the encoding's state leaving this layer, if it has one
        return x + self.drop(out)


class Transformer(nn.Module):
    """Decoder-only LM. ``forward(tokens, positions=None, annotations=None, generator=None)`` returns logits
    ``(B, T, vocab)``. ``annotations`` are the task's per-token annotations (name -> ``(B, T)`` int64), read by
    encodings that need some; ``generator`` is the trainer's positions generator in training (None at evaluation),
    from which such an encoding draws its training offsets."""

    def __init__(self, cfg: ModelConfig, encoding: PositionalEncoding) -> None:
        super().__init__()
        self.cfg = cfg
        self.encoding = encoding
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(Block(cfg, i) for i in range(cfg.n_layers))
        self.norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        # The encoding initialises its own parameters (e.g. the learned table's init_std option): skip its modules.
        encoding_modules = set(encoding.modules())
        for module in self.modules():
            if module not in encoding_modules:
                self._init_weights(module)
        # GPT-2 style scaled init of the residual projections (Radford et al. 2019).
        for name, p in self.named_parameters():
            if name.endswith(("attn.out.weight", "ffn.down.weight")):
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * cfg.n_layers))

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.Linear) or isinstance(module, nn.Embedding) and module.weight.shape[1] > 0:
            nn.init.normal_(module.weight, std=0.02)

    def _positions(self, tokens: Tensor, positions: Tensor | None) -> Tensor:
        t = tokens.shape[1]
        if positions is None:
            return torch.arange(t, device=tokens.device)
        positions = positions.to(tokens.device)
        if (
            positions.dim() not in (1, 2)
            or positions.shape[-1] != t
            or (positions.dim() == 2 and positions.shape[0] != tokens.shape[0])
        ):
            raise ValueError(
                f"positions must be (T,) or (B, T) with B={tokens.shape[0]}, T={t}, got {tuple(positions.shape)}"
            )
        return positions

    def _annotations(self, tokens: Tensor, annotations: Mapping[str, Tensor] | None) -> dict[str, Tensor]:
        """The annotations the encoding needs, on the tokens' device; a one-line error when one is missing or is not
        ``(B, T)``."""
        out = {}
        for name in sorted(self.encoding.needs):
            value = None if annotations is None else annotations.get(name)
            if value is None:
                raise ValueError(f"encoding {self.encoding.name} needs the {name!r} annotation, which this batch does "
                                 "not carry (its task does not provide it)")  # fmt: skip
            if value.shape != tokens.shape:
                want, got = tuple(tokens.shape), tuple(value.shape)
                raise ValueError(f"annotation {name!r} must be (B, T) = {want}, got {got}")
            out[name] = value.to(tokens.device)
        return out

    def hidden_states(self, tokens: Tensor, positions: Tensor | None = None,
                      annotations: Mapping[str, Tensor] | None = None, generator: torch.Generator | None = None
                      ) -> tuple[Tensor, Tensor]:  # fmt: skip
        """Residual stream entering the first block, and the positions used."""
        positions = self._positions(tokens, positions)
        x = self.embed(tokens)
        if self.encoding.needs:  # a vector from the task's annotations: the tokens never scaled (see ModelConfig)
            notes = self._annotations(tokens, annotations)
            vec = self.encoding.embed(positions, annotations=notes, generator=generator)
            return self.drop(x if vec is None else x + vec.to(x.dtype)), positions
        pos_vec = self.encoding.embed(positions)
        if pos_vec is not None:
            if self.cfg.scale_embeddings:  # balance tokens against the added position vector (Vaswani et al. §3.4)
                x = x * math.sqrt(self.cfg.d_model)
            x = x + pos_vec.to(x.dtype)
        return self.drop(x), positions

    def forward(self, tokens: Tensor, positions: Tensor | None = None,
                annotations: Mapping[str, Tensor] | None = None, generator: torch.Generator | None = None
                ) -> Tensor:  # fmt: skip
        x, positions = self.hidden_states(tokens, positions, annotations, generator)
        shared = pe_state.scratch(self.encoding, positions, x.shape[0])
        for block in self.blocks:
            x = block(x, positions, self.encoding, shared)
        return self.head(self.norm(x))

    @torch.no_grad()
    def attention_maps(self, tokens: Tensor, positions: Tensor | None = None, layer: int = -1,
                       annotations: Mapping[str, Tensor] | None = None) -> Tensor:  # fmt: skip
        """The attention weights ``(B, H, T, T)`` of ``layer`` (default the last), as at evaluation: the blocks' forward
        up to that layer, whose attention runs its kernel asking for the weights it uses
        (:meth:`Attention.attend`), so the maps are the kernel's own (a softmax, or an encoding's weights such as
        stick-breaking's, which need not sum to 1)."""
        x, positions = self.hidden_states(tokens, positions, annotations)
        layer = layer % len(self.blocks)
        shared = pe_state.scratch(self.encoding, positions, x.shape[0])
        for i, block in enumerate(self.blocks):
            if i == layer:
                _, weights = block.attn.attend(block.attn_norm(x), positions, self.encoding, shared, want_weights=True)
                assert weights is not None  # asked for: run_kernel checks the kernel returned them
                return weights
            x = block(x, positions, self.encoding, shared)
        raise AssertionError("unreachable")

    def set_step(self, step: int, total_steps: int) -> None:
        """Tell the encoding the training step (schedules)."""
        self.encoding.on_step(step, total_steps)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())
