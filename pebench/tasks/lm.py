"""Byte-level language modelling of real text, trained at context ``L`` and evaluated at ``L, 2L, 4L, 8L`` (full
tier also ``16L``) on one fixed stretch of the validation text.

Source: the standard long-context perplexity protocol (Press et al., "Train Short, Test Long" (ALiBi), ICLR 2022,
arXiv:2108.12409, sec. 2.1 and appendix B; Chen et al., "Extending Context Window of Large Language Models via
Positional Interpolation", 2023, arXiv:2306.15595).

Definition. Tokens are the 256 byte values (vocabulary 256) of a UTF-8 text. The task length ``T`` is the context
length in tokens. Training windows are ``T + 1`` consecutive bytes of the training text at uniformly random offsets:
inputs the first ``T``, targets the last ``T`` (every position scored).

Evaluation (:meth:`LanguageModelling.eval_batches`). Every evaluation length scores the *same* bytes: the
``n = n_samples x (L // 2)`` labels of one fixed stretch of the validation text (:meth:`~LanguageModelling.scored_span`;
it starts half the full tier's longest length into the text), so perplexities at different lengths are over the same
text, as in Press et al.'s comparison across lengths. Option ``eval`` (evaluation only: both protocols score one
trained model) says how windows of ``T`` tokens cover it:

* ``nonoverlapping`` (default since version 3; Press et al. sec. 2.1, "nonoverlapping inference", the protocol of
  their Fig. 1 and tables unless stated otherwise): consecutive windows of ``T`` tile the stretch and every position
  is scored, position ``t`` of a window with ``t`` tokens of context. A longer window gives more of its tokens a long
  context, so a model that extrapolates gets *lower* perplexity with ``T`` (their Fig. 1).
* ``sliding`` (version 2's protocol; Press et al. appendix B use stride 1, here stride ``s = T // 2``): windows of
  ``T`` overlap by ``T - s`` and each scores only its last ``s`` positions, so every label has between ``T - s`` and
  ``T - 1`` tokens of context.

Measured (ALiBi, default model, 600 steps, one seed; perplexity at 64 / 128 / 256 / 512): nonoverlapping 4.40, 4.31,
4.27, 4.26; sliding 4.21, 4.22, 4.24, 4.25. Version 1 drew a random stretch per length, of a size that grew with
``T``, and scored the first window's every position: 3.89, 3.34, 4.72, 4.21, a non-monotonic curve that mostly
measured which text each length drew (docs/tasks.md, "ALiBi on lm"). Metric: perplexity ``exp(mean cross-entropy per
byte over scored positions)``, lower is better; chance level 256 (a uniform predictor).

Corpora (option ``corpus``):

* ``stdlib`` (default, offline, no download): the top-level ``*.py`` files of the running interpreter's standard
  library, sorted by name; a file goes to validation when the first byte of the SHA-256 of its name is below 26
  (about 10%), else to training. The Python version, the file list's hash and the content hash are part of the
  task's configuration, so runs on different interpreters are never mixed.
* a directory holding ``train.txt`` and ``validation.txt``.
* ``hf:<dataset>`` (e.g. ``hf:roneneldan/TinyStories``): the ``text`` column of a Hugging Face dataset through the
  optional ``datasets`` package (train split; validation split, or test); needs the package and the network.
"""

from __future__ import annotations

import hashlib
import platform
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from pebench.errors import LengthError, OptionError
from pebench.options import Option
from pebench.tasks.base import IGNORE, Batch, Task, check_tier
from pebench.tasks.registry import register

VALID_CORPORA = "stdlib, a directory with train.txt and validation.txt, or hf:<dataset name>"
HF_MAX_BYTES = 50_000_000
EVAL_PROTOCOLS = ("nonoverlapping", "sliding")
EVAL_DEFAULT = "nonoverlapping"


@dataclass(frozen=True)
class Corpus:
    """Training and validation bytes of a corpus and what identifies it."""

    train: torch.Tensor
    validation: torch.Tensor
    info: dict[str, Any]


def _bytes_tensor(data: bytes) -> torch.Tensor:
    return torch.frombuffer(bytearray(data), dtype=torch.uint8) if data else torch.zeros(0, dtype=torch.uint8)


def stdlib_files() -> tuple[Path, list[Path]]:
    root = Path(sysconfig.get_paths()["stdlib"])
    return root, sorted(root.glob("*.py"))


def is_validation_file(name: str) -> bool:
    return hashlib.sha256(name.encode()).digest()[0] < 26


def load_stdlib() -> Corpus:
    root, files = stdlib_files()
    train, val = bytearray(), bytearray()
    content = hashlib.sha256()
    for path in files:
        data = path.read_bytes()
        content.update(path.name.encode() + b"\0" + data)
        (val if is_validation_file(path.name) else train).extend(data)
    info = {
        "source": "stdlib",
        "python_version": platform.python_version(),
        "stdlib_dir": str(root),
        "n_files": len(files),
        "files_sha256": hashlib.sha256("\n".join(p.name for p in files).encode()).hexdigest(),
        "content_sha256": content.hexdigest(),
    }
    return Corpus(_bytes_tensor(bytes(train)), _bytes_tensor(bytes(val)), info)


def load_directory(path: Path) -> Corpus:
    train, val = (path / "train.txt").read_bytes(), (path / "validation.txt").read_bytes()
    info = {
        "source": "directory",
        "path": str(path.resolve()),
        "train_sha256": hashlib.sha256(train).hexdigest(),
        "validation_sha256": hashlib.sha256(val).hexdigest(),
    }
    return Corpus(_bytes_tensor(train), _bytes_tensor(val), info)


def load_hf(name: str) -> Corpus:
    import datasets  # checked to be importable when the task was built

    try:
        ds = datasets.load_dataset(name)
    except Exception as err:  # offline, unknown name, ...
        raise OptionError(
            f"task lm: cannot load Hugging Face dataset {name!r} ({type(err).__name__}: {err})".replace("\n", " ")
        ) from None
    val_split = next((s for s in ("validation", "test") if s in ds), None)
    if "train" not in ds or val_split is None or "text" not in ds["train"].column_names:
        raise OptionError(f"task lm: dataset {name!r} needs a 'text' column and train and validation/test splits")

    def take(split: str) -> bytes:
        out, total = [], 0
        for text in ds[split]["text"]:
            b = text.encode("utf-8") + b"\n"
            out.append(b)
            total += len(b)
            if total >= HF_MAX_BYTES:
                break
        return b"".join(out)

    train, val = take("train"), take(val_split)
    info = {
        "source": "huggingface",
        "dataset": name,
        "validation_split": val_split,
        "max_bytes": HF_MAX_BYTES,
        "train_sha256": hashlib.sha256(train).hexdigest(),
        "validation_sha256": hashlib.sha256(val).hexdigest(),
    }
    return Corpus(_bytes_tensor(train), _bytes_tensor(val), info)


_CACHE: dict[str, Corpus] = {}


@register
class LanguageModelling(Task):
    name = "lm"
    version = "3"
    description = "byte-level language modelling of real text (default: the Python stdlib); nonoverlapping eval"
    paper = "Press et al. 2022, arXiv:2108.12409 (sliding-window perplexity)"
    options = {
        "corpus": Option("stdlib", f"text corpus: {VALID_CORPORA}", type=str),
        "context": Option(64, "training context length L (tokens)", type=int, low=2, high=1_000_000),
        "eval": Option(EVAL_DEFAULT, "evaluation windows: nonoverlapping (Press et al.'s default, every position "
                       "scored) or sliding (stride T/2, each label with at least T/2 context)", type=str,
                       choices=EVAL_PROTOCOLS, eval_only=True),
    }
    metric = "perplexity"
    min_length = 2

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.train_length = int(self.opts["context"])
        spec = str(self.opts["corpus"])
        self.corpus_spec = spec
        if spec == "stdlib":
            root, files = stdlib_files()
            if not files:
                raise OptionError(f"task lm: no *.py files in the standard library directory {root}")
        elif spec.startswith("hf:"):
            if not spec[3:]:
                raise OptionError(f"task lm: corpus {spec!r} names no dataset; valid corpora: {VALID_CORPORA}")
            try:
                import datasets  # noqa: F401
            except ImportError:
                raise OptionError(
                    f"task lm: corpus {spec!r} needs the optional 'datasets' package (pip install datasets) and "
                    f"network access; valid offline corpora: stdlib, or a directory with train.txt and validation.txt"
                ) from None
        else:
            path = Path(spec).expanduser()
            missing = [n for n in ("train.txt", "validation.txt") if not (path / n).is_file()]
            if missing:
                raise OptionError(
                    f"task lm: corpus {spec!r} is not a directory with {' and '.join(missing)}; "
                    f"valid corpora: {VALID_CORPORA}"
                )
            self.corpus_spec = str(path.resolve())

    # -- data --------------------------------------------------------------------------------------------------
    @property
    def corpus(self) -> Corpus:
        """The corpus, loaded on first use and shared by every task instance of this process."""
        spec = self.corpus_spec
        if spec not in _CACHE:
            if spec == "stdlib":
                corpus = load_stdlib()
            elif spec.startswith("hf:"):
                corpus = load_hf(spec[3:])
            else:
                corpus = load_directory(Path(spec))
            if len(corpus.train) < self.train_length + 1:
                raise OptionError(
                    f"task lm: the training text of corpus {spec!r} has {len(corpus.train)} bytes; "
                    f"it needs more than the context ({self.train_length})"
                )
            _CACHE[spec] = corpus
        return _CACHE[spec]

    # -- declarations ------------------------------------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        return 256

    @property
    def chance_level(self) -> float:
        return 256.0

    def eval_lengths(self, tier: str = "quick") -> list[int]:
        """Quick tier: L, 2L, 4L, 8L; full tier adds 16L."""
        check_tier(tier)
        factors = (1, 2, 4, 8) if tier == "quick" else (1, 2, 4, 8, 16)
        return [self.train_length * f for f in factors]

    def check_length(self, length: int) -> None:
        super().check_length(length)
        n_val = len(self.corpus.validation)
        if length + 1 > n_val:
            raise LengthError(
                f"task {self.name}: length {length} does not fit the validation text of {n_val} bytes; "
                f"valid lengths: {self.min_length}..{n_val - 1}"
            )

    def config(self) -> dict[str, Any]:
        return {**super().config(), "corpus": self.corpus.info}

    def sample(self, batch_size: int, length: int, generator: torch.Generator, split: str = "train") -> Batch:
        """Windows of ``length + 1`` bytes at uniform random offsets (training text for "train", else validation)."""
        self.check_length(length)
        self.check_split(split)
        text = self.corpus.train if split == "train" else self.corpus.validation
        if len(text) < length + 1:
            raise LengthError(f"task {self.name}: length {length} does not fit the training text of {len(text)} bytes")
        starts = torch.randint(0, len(text) - length, (batch_size,), generator=generator)
        windows = text[starts[:, None] + torch.arange(length + 1)[None, :]].long()
        return Batch(windows[:, :-1], windows[:, 1:].clone())

    def scored_span(self, length: int, n_samples: int) -> tuple[int, int]:
        """``(a, n)``: evaluation scores the labels ``text[a + 1 .. a + n]`` of the validation text, the same bytes at
        every length up to the full tier's longest (``a`` leaves the longest window its context before them);
        ``n = n_samples x (L // 2)``, so at the training length ``L`` there are ``n_samples`` windows, capped by the
        text's size."""
        text_len = len(self.corpus.validation)
        longest = max(length, *self.eval_lengths("full"))
        a = longest - longest // 2
        room = text_len - 1 - a - longest  # the last window may reach up to one stride (<= T) past the span
        if room < 1:  # a short validation text: the span that fits this length alone
            a = length - length // 2
            room = text_len - 1 - a - length
        return a, max(1, min(n_samples * max(1, self.train_length // 2), room))

    def eval_batches(
        self, length: int, n_samples: int, generator: torch.Generator, split: str, batch_size: int
    ) -> Iterator[Batch]:
        """Windows over one fixed stretch of the validation text, the same labels at every length (see the module
        docstring and :meth:`scored_span`): with option ``eval=sliding`` windows of ``T`` overlap by ``T - s``
        (stride ``s = T // 2``) and score their last ``s`` positions; with ``eval=nonoverlapping`` consecutive windows
        of ``T`` tile the stretch and score every position. Deterministic: ``generator`` is not used."""
        self.check_length(length)
        self.check_split(split)
        text = self.corpus.validation
        a, n = self.scored_span(length, n_samples)
        stride = length if self.opts["eval"] == "nonoverlapping" else max(1, length // 2)
        context = length - stride
        n_windows = -(-n // stride)
        offsets = torch.arange(length + 1)[None, :]
        for first in range(0, n_windows, batch_size):
            idx = torch.arange(first, min(first + batch_size, n_windows))
            starts = a - context + idx * stride
            windows = text[starts[:, None] + offsets].long()
            targets = windows[:, 1:].clone()
            targets[:, :context] = IGNORE  # context only: scored by no window, it is the window's history
            label = starts[:, None] + offsets[:, 1:]  # the text index each position predicts
            targets[label > a + n] = IGNORE
            yield Batch(windows[:, :-1], targets)
