"""User settings and the command-line options, each declared once.

:class:`Settings` holds the knobs of a suite run. A model or training knob is declared once, as a field of
:class:`pebench.models.ModelConfig` or :class:`pebench.engine.train_config.TrainConfig` with ``metadata=flag(help)``
(:func:`pebench.options.flag`): that gives its flag (type and default from the field), its :class:`Settings` keyword
and attribute, its place in the config (hashed, reused) and, by default, in the run's stored options; the config's
``__post_init__`` validates it (:meth:`Settings.check`). :data:`FLAGS` holds those and every other option of the
suite and of the ``pebench`` command (as pytest-benchmark shares its display options), each with the
:data:`SCOPES` it applies in: the suite adds its scopes' flags to pytest's parser, the CLI picks flags by name, both
through :func:`add_flags`, so a flag that both take (``--db``, ``--tolerance``, ``--d-model`` ...) has one name, one
default and one help text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import MISSING, Field, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pebench.case import TIERS
from pebench.engine.train_config import TrainConfig
from pebench.errors import ConfigError, PebenchError
from pebench.metrics import Tolerances
from pebench.models import ModelConfig
from pebench.options import FLAG, FlagSpec

if TYPE_CHECKING:
    from pebench.tasks.base import Task


def _config_fields() -> dict[str, tuple[type, Field[Any]]]:
    """Field name -> (config class, field) of every field of :class:`TrainConfig` and :class:`ModelConfig` declared
    with :func:`pebench.options.flag`."""
    return {f.name: (cls, f) for cls in (ModelConfig, TrainConfig) for f in fields(cls) if FLAG in f.metadata}


CONFIG_FIELDS = _config_fields()
"""The flagged config fields: each is a flag of the suite and the CLI, an attribute of :class:`Settings`, passed to
its config, and (unless its spec says otherwise) stored with the run. Adding one is one ``field(...,
metadata=flag(...))`` in :class:`TrainConfig` or :class:`ModelConfig` (and its use)."""


class _ConfigValue:
    """A flagged config field as an attribute of :class:`Settings`: the value given (kept in ``Settings.config``),
    else the field's default, which is also what the class attribute reads (``Settings.lr``)."""

    def __init__(self, name: str, default: Any) -> None:
        self.name, self.default = name, default

    def __get__(self, obj: Settings | None, owner: type | None = None) -> Any:
        return self.default if obj is None else obj.config.get(self.name, self.default)

    def __set__(self, obj: Settings, value: Any) -> None:
        obj.config[self.name] = value


SCALES: dict[str, tuple[int, int, int, float]] = {"tiny": (1, 1, 1, 1.0), "small": (2, 2, 2, 1.5),
                                                  "base": (3, 3, 2, 2.0)}  # fmt: skip
"""``--scale``: factors of (width, depth, heads, steps) on the settings. ``tiny`` is the settings as they are (the
defaults: d_model 128, 2 blocks, 4 heads, each task's steps); ``small`` (256, 4, 8, 1.5x the steps) costs about
4 x 2 x 1.5 = 12 times a tiny model's training compute (width² x depth x steps), ``base`` (384, 6, 8, 2x) about 54
times. A factor applies to whatever the flags set (``--d-model 64 --scale small`` is 128 wide)."""


@dataclass(init=False)
class Settings:
    """The knobs of a run (the suite's command-line options). ``steps`` None means the task's own default.

    Besides the fields below, every flagged field of :class:`TrainConfig` and :class:`ModelConfig`
    (:data:`CONFIG_FIELDS`: ``batch_size``, ``lr``, ``precision``, ``stop``, ``val_batches``, ``d_model``,
    ``n_heads`` ...) is a keyword of the constructor and an attribute, at the config's default unless given
    (``Settings(lr=1e-2).lr``); ``precision`` may also be ``auto``, resolved per device by the runner
    (:func:`pebench.engine.device.resolve_precision`)."""

    steps: int | None = None
    scale: str = "tiny"
    """A preset of :data:`SCALES`: factors on the width, depth, heads and steps below."""
    n_layers: int | None = None
    """Transformer blocks; None: the encoding's :attr:`~pebench.encodings.PositionalEncoding.default_layers`, else
    :attr:`ModelConfig.n_layers` (see :meth:`layers_for`)."""
    pack_seeds: int = 1
    """Seeds 0..K-1 of one (encoding, task, config) trained together as one batched model
    (:mod:`pebench.engine.packing`); 1: off."""
    eval_samples: int = 256
    eval_batch_size: int = 64
    device: str | None = None
    cache_dir: Path | None = None
    progress: bool | None = None
    extend: float | None = None
    """A second phase (:mod:`pebench.engine.extension`): each model, trained as usual, is fine-tuned at ``extend``
    times its training length (None: no second phase). Set per sweep point by the run's ``--extend`` axis."""
    extend_steps: int | None = None
    """Fine-tuning steps of the second phase; None: :data:`pebench.engine.extension.STEPS_FRACTION` of the base
    budget."""
    extend_lr: float = 0.1
    """The second phase's peak learning rate as a fraction of the base model's."""
    pose: bool = False
    """The second phase fine-tunes at the training length with PoSE's skipping position ids (Zhu et al. 2023,
    arXiv:2309.10400) instead of at the longer length."""
    scaffold: float | None = None
    """A second phase (:mod:`pebench.engine.scaffold`): each model's checkpoint at this fraction of its budget
    converted to NoPE and continued for the rest (None: none). Set per sweep point by the run's ``--scaffold`` axis."""
    diagnostics: bool = True
    """Whether every evaluated result stores the mechanism diagnostics (:mod:`pebench.engine.diagnostics`); they never
    change a model or a score."""
    encoding_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    task_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    """The flagged config fields given a value (read them as attributes)."""

    def __init__(self, config: Mapping[str, Any] | None = None, **values: Any) -> None:
        for f in fields(self):
            if f.name != "config":
                default = f.default_factory() if f.default is MISSING else f.default  # type: ignore[misc]
                object.__setattr__(self, f.name, values.pop(f.name, default))
        unknown = sorted(set(values) - set(CONFIG_FIELDS))
        if unknown:
            valid = ", ".join(sorted({f.name for f in fields(self)} - {"config"} | set(CONFIG_FIELDS)))
            raise TypeError(f"Settings has no setting {unknown[0]!r}; valid: {valid}")
        self.config = {**(config or {}), **values}

    @staticmethod
    def packed_seeds(pack: str, seeds: int, device: str | None) -> int:
        """How many seeds to pack for ``--pack`` (auto: on any device but the CPU, where a batched matmul is slower
        than separate ones), ``--seeds`` and ``--device``: ``seeds`` or 1."""
        from pebench.engine.device import pick_device

        on = pack == "on" or (pack == "auto" and pick_device(device).type != "cpu")
        return seeds if on and seeds > 1 else 1

    def _given(self, cls: type) -> dict[str, Any]:
        return {name: getattr(self, name) for name, (owner, _) in CONFIG_FIELDS.items() if owner is cls}

    def train_config(self, task: Task) -> TrainConfig:
        """The training configuration of ``task``'s models (``--precision auto`` resolved for :attr:`device`)."""
        from pebench.engine.device import pick_device, resolve_precision

        steps = self.steps if self.steps is not None else (task.default_steps or TrainConfig.steps)
        steps = round(steps * SCALES[self.scale][3])
        precision = resolve_precision(self.precision, pick_device(self.device))
        return TrainConfig(**self._given(TrainConfig) | {"steps": steps, "precision": precision})

    def layers_for(self, encoding: str | None = None) -> int:
        """The depth of ``encoding``'s models: ``--layers`` when given, else the encoding's ``default_layers``,
        else the global default; times the depth factor of :attr:`scale`."""
        depth = SCALES[self.scale][1]
        if self.n_layers is not None:
            return self.n_layers * depth
        if encoding is not None:
            from pebench import encodings

            own = encodings.get(encoding).default_layers
            if own is not None:
                return own * depth
        return ModelConfig.n_layers * depth

    def _model_values(self, encoding: str | None) -> dict[str, Any]:
        width, _, heads, _ = SCALES[self.scale]
        given = self._given(ModelConfig)
        return given | {"d_model": given["d_model"] * width, "n_heads": given["n_heads"] * heads,
                        "n_layers": self.layers_for(encoding)}  # fmt: skip

    def model_config(self, task: Task, encoding: str | None = None) -> ModelConfig:
        """The model of ``task`` (and ``encoding``, for its own depth), at :attr:`scale`."""
        return ModelConfig(**self._model_values(encoding) | {"vocab_size": task.vocab_size})

    def check(self) -> None:
        """Validate through the configs' own checks; an error names the settings as command-line flags."""
        try:
            if self.scale not in SCALES:
                raise PebenchError(f"--scale {self.scale!r} is invalid; valid: {', '.join(SCALES)}")
            ModelConfig(**self._model_values(None) | {"vocab_size": 1})
            TrainConfig(**self._given(TrainConfig) | {"steps": TrainConfig.steps if self.steps is None else self.steps,
                                                      "precision": "fp32" if self.precision == "auto"
                                                      else self.precision})  # fmt: skip
        except ConfigError as err:
            raise PebenchError(err.render(FLAG_NAMES)) from None
        if self.eval_samples <= 0:
            raise PebenchError(f"--eval-samples must be a positive integer, got {self.eval_samples}")
        if self.extend is not None and not (isinstance(self.extend, (int, float)) and self.extend > 1):
            raise PebenchError(f"--extend {self.extend!r} must be a number above 1 (the factor of the training length)")
        if self.extend_steps is not None and not (isinstance(self.extend_steps, int) and self.extend_steps > 0):
            raise PebenchError(f"--extend-steps {self.extend_steps!r} must be a positive integer")
        if self.scaffold is not None and not (isinstance(self.scaffold, (int, float)) and 0 < self.scaffold < 1):
            raise PebenchError(f"--scaffold {self.scaffold!r} must be a fraction of the budget in (0, 1), e.g. 0.625")
        if not (isinstance(self.extend_lr, (int, float)) and 0 < self.extend_lr <= 1):
            raise PebenchError(f"--extend-lr {self.extend_lr!r} must be a fraction in (0, 1] of the base model's rate")


for _name, (_cls, _field) in CONFIG_FIELDS.items():
    setattr(Settings, _name, _ConfigValue(_name, _field.default))


SCOPES = ("suite", "regression", "run", "setting", "compare", "sizes")
"""Where a flag applies: ``suite`` and ``regression``, the suite's two option groups; ``run``, stored with each run
(``runs.options``); ``setting``, passed by name to :class:`Settings`; ``compare``, the tolerances of ``pebench
compare``; ``sizes``, the model sizes ``pebench bench`` times."""


@dataclass(frozen=True)
class Flag:
    """One command-line option: its flag, destination, help, argparse keywords and where it applies
    (:data:`SCOPES`)."""

    flag: str
    dest: str
    help: str
    options: Mapping[str, Any] = field(default_factory=dict)
    scopes: frozenset[str] = frozenset()

    def add(self, add_option: Callable[..., Any]) -> None:
        """Add to pytest's ``group.addoption`` or argparse's ``parser.add_argument``."""
        add_option(self.flag, dest=self.dest, help=self.help, **self.options)


def _flag(flag: str, dest: str, help: str, options: Mapping[str, Any] | None = None, *scopes: str) -> Flag:
    assert set(scopes) <= set(SCOPES), scopes
    return Flag(flag, dest, help, options or {}, frozenset(scopes))


def _config_flag(name: str, f: Field[Any]) -> Flag:
    """The flag of a flagged config field (:func:`pebench.options.flag`): type and default are the field's."""
    spec: FlagSpec = f.metadata[FLAG]
    options: dict[str, Any] = {"default": f.default}
    if spec.choices is not None:
        options["choices"] = spec.choices
    else:
        options["type"] = type(f.default)
    scopes = {"suite", "setting", *spec.scopes} | ({"run"} if spec.stored else set())
    default = f"{f.default:g}" if isinstance(f.default, float) else f.default
    return _flag("--" + (spec.name or name).replace("_", "-"), name, f"{spec.help} (default {default})", options,
                 *sorted(scopes))  # fmt: skip


_TOL = Tolerances()
_FLAGS = (
    _flag("--db", "db", "results database URL (default: $PEBENCH_DB, else sqlite:///results.db in the project root; "
          "reference: the shipped reference results, for the commands that only read)",
          {}, "suite"),
    _flag("--tier", "tier", "quick: train length, 2x, 4x; full: more lengths; lite: the quick tier on the few tasks "
          "whose results predict the full aggregate, and that prediction (pebench/data/lite.json, studies/lite)",
          {"default": "quick", "choices": (*TIERS, "lite")}, "suite", "run"),
    _flag("--steps", "steps", "training steps per model (default: the task's own)", {"type": int},
          "suite", "run", "setting"),
    _flag("--seeds", "seeds", "seeds per (encoding, task): a number (default 1), or auto[:N]: seed 0 everywhere, "
          "then more seeds (at most N, default 5) only where the noise rule leaves a verdict open (docs/regression.md)",
          {"default": "1", "metavar": "K|auto[:N]"}, "suite", "run"),
    _flag("--pack", "pack", "with --seeds K, train a model's K seeds together as one batched model: auto (default: "
          "on a GPU, not on the CPU, where it measured slower), on or off (docs/scale-out.md)",
          {"default": "auto", "choices": ("auto", "on", "off")}, "suite", "run"),
    *(_config_flag(name, f) for name, (cls, f) in CONFIG_FIELDS.items() if cls is ModelConfig),
    _flag("--scale", "scale", "model and training size: tiny (the settings as given: d_model 128, 2 blocks, 4 heads, "
          "each task's steps), small (2x width, depth and heads, 1.5x steps) or base (3x width and depth, 2x heads, "
          "2x steps); factors on the other flags (docs/sweeps.md#scale)", {"default": "tiny", "choices": tuple(SCALES)},
          "suite", "run", "setting"),
    _flag("--layers", "n_layers", f"transformer blocks (default {ModelConfig.n_layers}, or the encoding's own "
          "default_layers: nope, nope_qknorm, ssmax_nope 6, see docs/encodings.md)",
          {"type": int, "default": Settings.n_layers}, "suite", "run", "setting", "sizes"),
    *(_config_flag(name, f) for name, (cls, f) in CONFIG_FIELDS.items() if cls is not ModelConfig),
    _flag("--eval-samples", "eval_samples", f"held-out sequences per case (default {Settings.eval_samples})",
          {"type": int, "default": Settings.eval_samples}, "suite", "run", "setting"),
    _flag("--extend", "extend", "continue each trained model: fine-tune it at F times its training length and evaluate "
          "it at L, F*L and 2F*L, stored at its own point (ext2x for F = 2); the context-extension methods (pi, ntk, "
          "yarn, llama3, longrope) start from RoPE's model and apply their factor F from the fine-tune on "
          "(docs/extension.md)", {"type": float, "metavar": "F"}, "suite", "run"),
    _flag("--extend-steps", "extend_steps", "fine-tuning steps of --extend (default: a quarter of the base budget, "
          "docs/extension.md)", {"type": int}, "suite", "run", "setting"),
    _flag("--extend-lr", "extend_lr", f"peak learning rate of the --extend fine-tune as a fraction of the base model's "
          f"(default {Settings.extend_lr:g})", {"type": float, "default": Settings.extend_lr}, "suite", "run",
          "setting"),
    _flag("--pose", "pose", "with --extend: fine-tune at the training length with PoSE's skipping position ids "
          "covering F*L (Zhu et al. 2023, arXiv:2309.10400), stored at the point pose2x", {"action": "store_true"},
          "suite", "run", "setting"),
    _flag("--scaffold", "scaffold", "seed study 003's scaffold runs: each model's checkpoint at this fraction of its "
          "budget (e.g. 0.625) converted to NoPE and continued for the rest with a fresh schedule, stored at the point "
          "scaffold0.625 (docs/extension.md)", {"type": float, "metavar": "FRACTION"}, "suite", "run"),
    _flag("--no-diagnostics", "diagnostics", "store no mechanism diagnostics (attention entropy, local and sink mass, "
          "position probe, logit range; docs/diagnostics.md) with the results (they cost about one training step a "
          "case)", {"action": "store_false", "default": True}, "suite", "run", "setting"),
    _flag("--diagnostics-run", "diagnostics_run", "this run measures the mechanism diagnostics of cells ranked in "
          "other runs (the reference's, retrained): with --run all its results are set aside, read by the page's "
          "Why section and the mechanism findings only, never ranked, joined as a reference or guarded "
          "(docs/diagnostics.md)", {"action": "store_true"}, "suite", "run"),
    _flag("--device", "device", "auto (cuda, then mps, then cpu), cpu, cuda, cuda:N or mps (default auto)",
          {"default": "auto"}, "suite", "run", "setting"),
    _flag("--plugin", "pebench_plugins", "import encodings and tasks from a Python file or module (repeatable; also "
          "the ini option pebench_plugins); its @register classes join the built-ins (docs/extending.md#plugins)",
          {"action": "append", "default": [], "metavar": "PATH.py|MODULE"}, "suite"),
    _flag("--sweep", "sweep", "one more axis of cases: a setting (layers, heads, d_model, lr, steps, batch_size, "
          "weight_decay ...) or ENCODING:OPTION / TASK:OPTION over the values given, e.g. layers=2,4 or "
          "rope:base=100,10000 (repeatable: the sweeps multiply); each value is its own model and a part of the case "
          "id (rope-k_back-L64-layers4; docs/sweeps.md)", {"action": "append", "default": [],
                                                             "metavar": "NAME=V1,V2,..."}, "suite", "run"),
    _flag("--lr-sweep", "lr_sweep", "the learning-rate protocol: train every case at each rate and report each "
          "(encoding, task, seed) at the rate with the best in-distribution validation; the default, over 0.001,0.003 "
          "(V1,V2,...: other rates; off: one rate, --lr, as an explicit --lr, --sweep or --seeds auto also ask; "
          "docs/defaults.md)", {"nargs": "?", "const": "", "default": None, "metavar": "V1,V2,...|off"},
          "suite", "run"),
    _flag("--lr-halving", "lr_halving", "with the learning-rate sweep: every rate first for budget/k steps, only the "
          "best continued to the full budget (about 2 models' cost per cell whatever k; docs/sweeps.md)",
          {"action": "store_true"}, "suite", "run"),
    _flag("--encoding", "encoding", "comma-separated encodings to run (default: all)", {}, "suite", "run"),
    _flag("--task", "task", "comma-separated tasks to run (default: all)", {}, "suite", "run"),
    _flag("--encoding-options", "encoding_options", "options of one encoding, e.g. rope:base=500 (repeatable)",
          {"action": "append", "default": [], "metavar": "NAME:KEY=VALUE,..."}, "suite", "run"),
    _flag("--task-options", "task_options", "options of one task, e.g. k_back:k=5 (repeatable)",
          {"action": "append", "default": [], "metavar": "NAME:KEY=VALUE,..."}, "suite", "run"),
    _flag("--cache-dir", "cache_dir", "checkpoint directory (default <root>/.pebench_cache)", {}, "suite"),
    _flag("--no-cache", "no_cache", "neither load nor save model checkpoints", {"action": "store_true"},
          "suite", "run"),
    _flag("--shard", "shard", "run only part I of N of the selected cases, split by model and balanced by expected "
          "cost (e.g. 2/3; merge the parts with pebench merge)", {"metavar": "I/N"}, "suite", "run"),
    _flag("--executor", "executor", "where models are trained: local (this process, default) or ray (Ray tasks on a "
          "local instance or the cluster at --ray-address; pip install 'pebench[ray]')",
          {"default": "local", "choices": ("local", "ray")}, "suite", "run"),
    _flag("--ray-address", "ray_address", "Ray cluster to train on with --executor ray (e.g. auto or "
          "ray://head:10001; default: a local instance for the session)", {"metavar": "ADDRESS"}, "suite"),
    _flag("--timing-table", "timing_table", "also print pytest-benchmark's table of training times (one round per "
          "trained model)", {"action": "store_true"}, "suite"),
    _flag("--report", "report", "render the run's HTML leaderboard to PATH at the end", {"metavar": "PATH"}, "suite"),
    _flag("--with-reference", "with_reference", "with --report (or pebench report): put the run beside the reference "
          "results of every encoding it did not run, where comparable (same task version and configuration); URL: "
          "a database of reference runs (default: the results shipped with pebench)",
          {"nargs": "?", "const": "", "default": None, "metavar": "URL"}, "suite"),
    _flag("--allow-stale", "allow_stale", "with --with-reference: show reference results that are not what this "
          "pebench computes too, counted as stale on the page (default: refuse them, naming the cells)",
          {"action": "store_true"}, "suite"),
    _flag("--reuse", "reuse", "copy a case's result from an earlier run with the same config hash, computed by "
          "code that computes the same (its fingerprints), instead of training (marked reused_from in the database)",
          {"action": "store_true"}, "regression", "run"),
    _flag("--baseline", "baseline", "fail each case that regressed against this run of the database (previous: the "
          "newest run before this one)", {"metavar": "previous|RUN_ID"}, "regression", "run"),
    _flag("--tolerance", "tolerance", f"absolute drop tolerated for accuracy-like metrics (default "
          f"{_TOL.accuracy:g})", {"type": float, "default": _TOL.accuracy}, "regression", "run", "compare"),
    _flag("--ppl-tolerance", "ppl_tolerance", f"relative perplexity rise tolerated (default {_TOL.perplexity:g})",
          {"type": float, "default": _TOL.perplexity}, "regression", "run", "compare"),
    _flag("--speed-tolerance", "speed_tolerance",
          f"relative training-throughput drop tolerated (default {_TOL.speed:g})",
          {"type": float, "default": _TOL.speed}, "compare"),
    _flag("--deterministic", "deterministic", "torch.use_deterministic_algorithms(True) (needed for bit-reproducible "
          "CUDA runs; CPU already is)", {"action": "store_true"}, "regression", "run"),
)  # fmt: skip
FLAGS: dict[str, Flag] = {f.dest: f for f in _FLAGS}

FLAG_NAMES = {"accuracy": "--tolerance", "perplexity": "--ppl-tolerance", "speed": "--speed-tolerance"} | {
    dest: f.flag for dest, f in FLAGS.items()
}
"""Setting or tolerance field -> its flag, for error messages."""


def dests(scope: str) -> list[str]:
    """The destinations of the flags that apply in ``scope`` (one of :data:`SCOPES`), in declaration order."""
    if scope not in SCOPES:
        raise ValueError(f"unknown flag scope {scope!r}; valid: {', '.join(SCOPES)}")
    return [dest for dest, f in FLAGS.items() if scope in f.scopes]


def add_flags(add_option: Callable[..., Any], names: Sequence[str], deferred: bool = False,
              **overrides: Mapping[str, Any]) -> None:  # fmt: skip
    """Add the flags ``names`` (destinations) with ``add_option`` (``overrides[dest]`` replaces some of a flag's
    keywords). ``deferred`` (the suite): a flag's type and choices are left to :func:`check_values`, which converts
    the strings given and refuses a bad one in one line -- pytest's parser would answer with its usage block."""
    for dest in names:
        flag = FLAGS[dest]
        options = {**flag.options, **overrides.get(dest, {})}
        if deferred and ("type" in options or "choices" in options):
            choices = options.pop("choices", None)
            options.pop("type", None)
            if choices is not None:
                options.setdefault("metavar", "{" + ",".join(map(str, choices)) + "}")
        flag = Flag(flag.flag, flag.dest, options.pop("help", flag.help), options, flag.scopes)
        flag.add(add_option)


_TYPE_NAMES = {int: "an integer", float: "a number"}


def given_flags(values: Any, names: Sequence[str]) -> set[str]:
    """The flags of ``names`` (destinations, added with ``deferred``) that the command gives, wherever (its arguments,
    ``$PYTEST_ADDOPTS``, the ini file's ``addopts``): before :func:`check_values` a given value is still the text
    typed, a default never is (defaults are of the flag's type); a switch (``--pose``, ``--no-diagnostics``) is given
    when its value is not its default."""
    switches = ("store_true", "store_false")
    return {dest for dest in names if isinstance(getattr(values, dest, None), str)
            or (FLAGS[dest].options.get("action") in switches
                and getattr(values, dest, None) != FLAGS[dest].options.get("default", False))}  # fmt: skip


def check_values(values: Any, names: Sequence[str]) -> None:
    """Convert the flags ``names`` of the namespace ``values`` that were given as strings (added with
    ``deferred``) to their types, in place; a value that is not of its type or not one of its choices is a one-line
    error naming the flag as typed and what it takes (``--stop 'nosuch' is not valid; valid: budget, learned,
    plateau``)."""
    for dest in names:
        flag, value = FLAGS[dest], getattr(values, dest, None)
        if not isinstance(value, str):
            continue
        kind, choices = flag.options.get("type"), flag.options.get("choices")
        if kind in _TYPE_NAMES:
            try:
                value = kind(value)
            except ValueError:
                raise PebenchError(f"{flag.flag} {value!r} is not {_TYPE_NAMES[kind]}") from None
        if choices is not None and value not in choices:
            raise PebenchError(f"{flag.flag} {value!r} is not valid; valid: {', '.join(map(str, choices))}")
        setattr(values, dest, value)


def tolerances(accuracy: float, perplexity: float, speed: float = _TOL.speed) -> Tolerances:
    """:class:`Tolerances` from the flags' values; a bad one is an error naming its flag."""
    try:
        return Tolerances(accuracy=accuracy, perplexity=perplexity, speed=speed)
    except ConfigError as err:
        raise PebenchError(err.render(FLAG_NAMES)) from None
