"""User settings and the command-line options, each declared once.

:class:`Settings` holds the knobs of a suite run; its defaults are those of :class:`pebench.models.ModelConfig` and
:class:`pebench.training.TrainConfig`, which also validate them (:meth:`Settings.check`). :data:`FLAGS` declares every
option of the suite and of the ``pebench`` command (as pytest-benchmark shares its display options): the suite adds
them to pytest's parser, the CLI to argparse's, through :func:`add_flags`, so a flag that both take (``--db``,
``--tolerance``, ``--d-model`` ...) has one name, one default and one help text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pebench.errors import ConfigError, PebenchError
from pebench.metrics import Tolerances
from pebench.models import ModelConfig
from pebench.stopping import STOP_RULES
from pebench.tasks.base import TIERS, Task
from pebench.training import PRECISIONS, TrainConfig


@dataclass
class Settings:
    """The knobs of a run (the suite's command-line options). ``steps`` None means the task's own default."""

    steps: int | None = None
    batch_size: int = TrainConfig.batch_size
    lr: float = TrainConfig.lr
    precision: str = TrainConfig.precision
    """One of :data:`pebench.training.PRECISIONS` or ``auto`` (resolved per device by the runner,
    :func:`pebench.device.resolve_precision`)."""
    val_batches: int = TrainConfig.val_batches
    stop: str = TrainConfig.stop
    """The stop rule (:class:`pebench.training.StopRule`)."""
    pack_seeds: int = 1
    """Seeds 0..K-1 of one (encoding, task, config) trained together as one batched model (pebench.packing); 1: off."""

    @staticmethod
    def packed_seeds(pack: str, seeds: int, device: str | None) -> int:
        """How many seeds to pack for ``--pack`` (auto: on any device but the CPU, where a batched matmul is slower
        than separate ones), ``--seeds`` and ``--device``: ``seeds`` or 1."""
        from pebench.device import pick_device

        on = pack == "on" or (pack == "auto" and pick_device(device).type != "cpu")
        return seeds if on and seeds > 1 else 1
    d_model: int = ModelConfig.d_model
    n_layers: int | None = None
    """Transformer blocks; None: the encoding's :attr:`~pebench.encodings.PositionalEncoding.default_layers`, else
    :attr:`ModelConfig.n_layers` (see :meth:`layers_for`)."""
    n_heads: int = ModelConfig.n_heads
    dropout: float = ModelConfig.dropout
    eval_samples: int = 256
    eval_batch_size: int = 64
    device: str | None = None
    cache_dir: Path | None = None
    progress: bool | None = None
    encoding_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    task_options: dict[str, dict[str, Any]] = field(default_factory=dict)

    def train_config(self, task: Task) -> TrainConfig:
        """The training configuration of ``task``'s models (``--precision auto`` resolved for :attr:`device`)."""
        from pebench.device import pick_device, resolve_precision

        steps = self.steps if self.steps is not None else (task.default_steps or TrainConfig.steps)
        precision = resolve_precision(self.precision, pick_device(self.device))
        return TrainConfig(steps=steps, batch_size=self.batch_size, lr=self.lr, precision=precision,
                           val_batches=self.val_batches, stop=self.stop)  # fmt: skip

    def layers_for(self, encoding: str | None = None) -> int:
        """The depth of ``encoding``'s models: ``--layers`` when given, else the encoding's ``default_layers``,
        else the global default."""
        if self.n_layers is not None:
            return self.n_layers
        if encoding is not None:
            from pebench import encodings

            own = encodings.get(encoding).default_layers
            if own is not None:
                return own
        return ModelConfig.n_layers

    def model_config(self, task: Task, encoding: str | None = None) -> ModelConfig:
        return ModelConfig(
            vocab_size=task.vocab_size,
            d_model=self.d_model,
            n_layers=self.layers_for(encoding),
            n_heads=self.n_heads,
            dropout=self.dropout,
        )

    def check(self) -> None:
        """Validate through the configs' own checks; an error names the settings as command-line flags."""
        try:
            ModelConfig(vocab_size=1, d_model=self.d_model, n_layers=self.layers_for(), n_heads=self.n_heads,
                        dropout=self.dropout)  # fmt: skip
            TrainConfig(steps=TrainConfig.steps if self.steps is None else self.steps, batch_size=self.batch_size,
                        lr=self.lr, precision="fp32" if self.precision == "auto" else self.precision,
                        val_batches=self.val_batches, stop=self.stop)  # fmt: skip
        except ConfigError as err:
            raise PebenchError(err.render(FLAG_NAMES)) from None
        if self.eval_samples <= 0:
            raise PebenchError(f"--eval-samples must be a positive integer, got {self.eval_samples}")


@dataclass(frozen=True)
class Flag:
    """One command-line option: its flag, destination, help and argparse keywords."""

    flag: str
    dest: str
    help: str
    options: Mapping[str, Any] = field(default_factory=dict)

    def add(self, add_option: Callable[..., Any]) -> None:
        """Add to pytest's ``group.addoption`` or argparse's ``parser.add_argument``."""
        add_option(self.flag, dest=self.dest, help=self.help, **self.options)


_TOL = Tolerances()
FLAGS: dict[str, Flag] = {f.dest: f for f in (
    Flag("--db", "db", "results database URL (default: $PEBENCH_DB, else sqlite:///results.db in the project root)"),
    Flag("--tier", "tier", "quick: train length, 2x, 4x; full: more lengths", {"default": "quick", "choices": TIERS}),
    Flag("--steps", "steps", "training steps per model (default: the task's own)", {"type": int}),
    Flag("--seeds", "seeds", "seeds per (encoding, task): a number (default 1), or auto[:N]: seed 0 everywhere, then "
         "more seeds (at most N, default 5) only where the noise rule leaves a verdict open (docs/regression.md)",
         {"default": "1", "metavar": "K|auto[:N]"}),
    Flag("--pack", "pack", "with --seeds K, train a model's K seeds together as one batched model: auto (default: on "
         "a GPU, not on the CPU, where it measured slower), on or off (docs/scale-out.md)",
         {"default": "auto", "choices": ("auto", "on", "off")}),
    Flag("--d-model", "d_model", f"model width (default {Settings.d_model})",
         {"type": int, "default": Settings.d_model}),
    Flag("--layers", "n_layers", f"transformer blocks (default {ModelConfig.n_layers}, or the encoding's own "
         "default_layers: nope, nope_qknorm 6, see docs/encodings.md)", {"type": int, "default": Settings.n_layers}),
    Flag("--heads", "n_heads", f"attention heads (default {Settings.n_heads})",
         {"type": int, "default": Settings.n_heads}),
    Flag("--batch-size", "batch_size", f"training batch size (default {Settings.batch_size})",
         {"type": int, "default": Settings.batch_size}),
    Flag("--lr", "lr", f"peak learning rate of AdamW (default {Settings.lr:g})",
         {"type": float, "default": Settings.lr}),
    Flag("--precision", "precision", "training precision: fp32 (default), bf16 (autocast; weights, optimiser state "
         "and loss stay fp32), tf32 (TensorFloat-32 matmuls on GPUs that have them) or auto (bf16 on a GPU or CPU "
         "with native bfloat16, else fp32); the precision used is recorded in the configuration unless fp32",
         {"default": TrainConfig.precision, "choices": (*PRECISIONS, "auto")}),
    Flag("--stop", "stop", "when a model stops training: budget (default: the task's step count), learned (as soon "
         "as its training accuracy is at least 0.99 over the last 3 learning-curve points, else at the budget) or "
         "plateau (learned, or the training loss flat in the second half); part of the configuration "
         "(docs/defaults.md)", {"default": TrainConfig.stop, "choices": STOP_RULES}),
    Flag("--val-batches", "val_batches", "held-out batches per length (the training length and 2x) evaluated at each "
         f"learning-curve point; 0: none (default {TrainConfig.val_batches}; never changes the trained model)",
         {"type": int, "default": TrainConfig.val_batches}),
    Flag("--eval-samples", "eval_samples", f"held-out sequences per case (default {Settings.eval_samples})",
         {"type": int, "default": Settings.eval_samples}),
    Flag("--device", "device", "auto (cuda, then mps, then cpu), cpu, cuda, cuda:N or mps (default auto)",
         {"default": "auto"}),
    Flag("--plugin", "pebench_plugins", "import encodings and tasks from a Python file or module (repeatable; also "
         "the ini option pebench_plugins); its @register classes join the built-ins (docs/extending.md#plugins)",
         {"action": "append", "default": [], "metavar": "PATH.py|MODULE"}),
    Flag("--encoding", "encoding", "comma-separated encodings to run (default: all)"),
    Flag("--task", "task", "comma-separated tasks to run (default: all)"),
    Flag("--encoding-options", "encoding_options", "options of one encoding, e.g. rope:base=500 (repeatable)",
         {"action": "append", "default": [], "metavar": "NAME:KEY=VALUE,..."}),
    Flag("--task-options", "task_options", "options of one task, e.g. k_back:k=5 (repeatable)",
         {"action": "append", "default": [], "metavar": "NAME:KEY=VALUE,..."}),
    Flag("--cache-dir", "cache_dir", "checkpoint directory (default <root>/.pebench_cache)"),
    Flag("--no-cache", "no_cache", "neither load nor save model checkpoints", {"action": "store_true"}),
    Flag("--shard", "shard", "run only part I of N of the selected cases, split by model and balanced by expected "
         "cost (e.g. 2/3; merge the parts with pebench merge)", {"metavar": "I/N"}),
    Flag("--executor", "executor", "where models are trained: local (this process, default) or ray (Ray tasks on a "
         "local instance or the cluster at --ray-address; pip install 'pebench[ray]')",
         {"default": "local", "choices": ("local", "ray")}),
    Flag("--ray-address", "ray_address", "Ray cluster to train on with --executor ray (e.g. auto or "
         "ray://head:10001; default: a local instance for the session)", {"metavar": "ADDRESS"}),
    Flag("--timing-table", "timing_table", "also print pytest-benchmark's table of training times (one round per "
         "trained model)", {"action": "store_true"}),
    Flag("--report", "report", "render the run's HTML leaderboard to PATH at the end", {"metavar": "PATH"}),
    Flag("--reuse", "reuse", "copy a case's result from an earlier run with the same config hash and code version "
         "instead of training (marked reused_from in the database)", {"action": "store_true"}),
    Flag("--baseline", "baseline", "fail each case that regressed against this run of the database (previous: the "
         "newest run before this one)", {"metavar": "previous|RUN_ID"}),
    Flag("--tolerance", "tolerance", f"absolute drop tolerated for accuracy-like metrics (default {_TOL.accuracy:g})",
         {"type": float, "default": _TOL.accuracy}),
    Flag("--ppl-tolerance", "ppl_tolerance", f"relative perplexity rise tolerated (default {_TOL.perplexity:g})",
         {"type": float, "default": _TOL.perplexity}),
    Flag("--speed-tolerance", "speed_tolerance",
         f"relative training-throughput drop tolerated (default {_TOL.speed:g})",
         {"type": float, "default": _TOL.speed}),
    Flag("--deterministic", "deterministic", "torch.use_deterministic_algorithms(True) (needed for bit-reproducible "
         "CUDA runs; CPU already is)", {"action": "store_true"}),
)}  # fmt: skip

FLAG_NAMES = {"accuracy": "--tolerance", "perplexity": "--ppl-tolerance", "speed": "--speed-tolerance"} | {
    dest: f.flag for dest, f in FLAGS.items()
}
"""Setting or tolerance field -> its flag, for error messages."""

MODEL_FLAGS = ("d_model", "n_layers", "n_heads", "batch_size")
TOLERANCE_FLAGS = ("tolerance", "ppl_tolerance")


def add_flags(add_option: Callable[..., Any], dests: Sequence[str], **overrides: Mapping[str, Any]) -> None:
    """Add the flags ``dests`` with ``add_option`` (``overrides[dest]`` replaces some of a flag's keywords)."""
    for dest in dests:
        flag = FLAGS[dest]
        if dest in overrides:
            options = {**flag.options, **overrides[dest]}
            flag = Flag(flag.flag, flag.dest, options.pop("help", flag.help), options)
        flag.add(add_option)


def tolerances(accuracy: float, perplexity: float, speed: float = _TOL.speed) -> Tolerances:
    """:class:`Tolerances` from the flags' values; a bad one is an error naming its flag."""
    try:
        return Tolerances(accuracy=accuracy, perplexity=perplexity, speed=speed)
    except ConfigError as err:
        raise PebenchError(err.render(FLAG_NAMES)) from None
