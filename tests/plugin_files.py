"""Plugin sources the tests write to disk: a user's encoding file, files that clash or fail, and a tiny installable
package contributing an encoding and a task through pebench's entry-point groups."""

from __future__ import annotations

import textwrap
from pathlib import Path

MY_PE = '''
"""A user's positional encoding: one linear distance penalty shared by every head (ALiBi with a single slope)."""

import torch

from pebench.encodings import PositionalEncoding, register
from pebench.encodings.base import relative_distances
from pebench.options import Option


@register
class MyPE(PositionalEncoding):
    name = "{name}"
    family = "bias"
    description = "one linear distance penalty shared by every head"
    paper = "a user's plugin"
    options = {{"slope": Option(0.5, "the penalty per token of distance", float, low=0.0)}}
    bias_shared_by_layers = True

    def attn_bias(self, q, k, positions, layer):
        return -self.opts["slope"] * relative_distances(positions).abs().to(torch.float32)
'''

BROKEN = '''
"""A plugin that fails on import."""

from pebench.encodings import register

VALUE = undefined_name + 1
'''

EMPTY = '''
"""A plugin that forgot @register."""

from pebench.encodings import PositionalEncoding


class Forgotten(PositionalEncoding):
    name = "forgotten"
'''

PACKAGE_PYPROJECT = '''
[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

[project]
name = "pebench-tiny-plugin"
version = "0.1"

[project.entry-points."pebench.encodings"]
tiny_pe = "tiny_pe_plugin"

[project.entry-points."pebench.tasks"]
tiny_back = "tiny_pe_plugin:TinyBack"

[tool.setuptools]
py-modules = ["tiny_pe_plugin"]
'''

PACKAGE_MODULE = '''
"""An installed plugin: an encoding registered by @register (the entry point names the module) and a task the entry
point names as a class (registered by pebench)."""

from pebench.encodings import register
from pebench.encodings.alibi import ALiBi
from pebench.tasks.k_back import KBack


@register
class TinyPE(ALiBi):
    name = "tiny_pe"
    description = "ALiBi under another name, from an installed package"
    paper = "a tiny package"


class TinyBack(KBack):
    name = "tiny_back"
    description = "k_back under another name, from an installed package"
'''


def write(directory: Path, name: str, text: str) -> Path:
    """``text`` (dedented) written to ``directory / name``; the path."""
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def my_pe(directory: Path, name: str = "my_pe", file: str | None = None) -> Path:
    """A plugin file registering the encoding ``name`` (default ``my_pe.py``)."""
    return write(directory, file or f"{name}.py", MY_PE.format(name=name))


def tiny_package(directory: Path) -> Path:
    """The source tree of the installable package ``pebench-tiny-plugin``."""
    write(directory, "pyproject.toml", PACKAGE_PYPROJECT)
    write(directory, "tiny_pe_plugin.py", PACKAGE_MODULE)
    return directory

BROKEN_ENCODINGS = '''
"""Three encodings that break the contract, one property each (pebench check must name it)."""

import torch

from pebench.encodings import PositionalEncoding, register


@register
class LeaksTheFuture(PositionalEncoding):
    name = "leaks_future"
    family = "none"
    position_free = True
    description = "adds the mean key of the whole sequence, future included, to every query"

    def transform_qk(self, q, k, positions, layer):
        return q + k.mean(dim=2, keepdim=True), k


@register
class DependsOnTheBatch(PositionalEncoding):
    name = "batch_dependent"
    family = "none"
    position_free = True
    description = "adds the batch's mean query to every query"

    def transform_qk(self, q, k, positions, layer):
        return q + q.mean(dim=0, keepdim=True), k


@register
class NonDeterministic(PositionalEncoding):
    name = "non_deterministic"
    family = "absolute"
    description = "adds fresh noise from the global generator at every call"

    def embed(self, positions):
        return 0.5 * torch.randn(positions.shape[-1], self.ctx.d_model)
'''
"""Each breaks one property: causality, batch independence, determinism (in that order)."""

POSITION_BLIND = '''
"""A bias encoding whose bias is all zeros: it says it is relative, and ignores the positions (uses position)."""

import torch

from pebench.encodings import PositionalEncoding, register


@register
class Blind(PositionalEncoding):
    name = "blind"
    family = "bias"
    description = "an attention bias of zeros"
    bias_shared_by_layers = True

    def attn_bias(self, q, k, positions, layer):
        t = positions.shape[-1]
        return torch.zeros(q.shape[1], t, t)
'''

WRONG_SHAPE = '''
"""A bias encoding whose bias has one key too many: (H, T, T + 1) where (H, T, T) is expected (hook shapes)."""

import torch

from pebench.encodings import PositionalEncoding, register
from pebench.encodings.base import relative_distances


@register
class WrongShape(PositionalEncoding):
    name = "wrong_shape"
    family = "bias"
    description = "a distance bias with one key too many"
    bias_shared_by_layers = True

    def attn_bias(self, q, k, positions, layer):
        bias = -relative_distances(positions).abs().float()
        return torch.cat([bias, bias[:, :1]], dim=1).expand(q.shape[1], -1, -1)
'''

PROBE_FAILURE = '''
"""A bias encoding that passes the suite's preflight (its hooks on a batch of two) and raises on any larger batch."""

import torch

from pebench.encodings import PositionalEncoding, register
from pebench.encodings.base import relative_distances


@register
class BatchShy(PositionalEncoding):
    name = "batch_shy"
    family = "bias"
    description = "a distance bias that refuses batches of more than two"

    def attn_bias(self, q, k, positions, layer):
        if q.shape[0] > 2:
            raise ValueError(f"batch_shy takes at most 2 sequences, got {q.shape[0]}")
        return -relative_distances(positions).abs().to(torch.float32)


@register
class TrainShy(PositionalEncoding):
    name = "train_shy"
    family = "bias"
    description = "a distance bias that refuses to train on batches of more than four"

    def attn_bias(self, q, k, positions, layer):
        if torch.is_grad_enabled() and q.shape[0] > 4:
            raise ValueError(f"train_shy trains on at most 4 sequences, got {q.shape[0]}")
        return -relative_distances(positions).abs().to(torch.float32)
'''
"""Two encodings that pass the suite's preflight (hooks on a batch of two) and fail later: ``batch_shy`` on any
larger batch, i.e. in the behavioural probe (batches of four); ``train_shy`` only on a training batch of more than
four, i.e. past the probe, in the suite's training (batches of eight in the tests)."""
