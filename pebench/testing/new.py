"""``pebench new encoding|task NAME [--dir DIR]``: a commented starting file for a plugin (one hook filled in with a
real, simple positional method, the other hooks explained in one line each) and a pytest file that runs the
conformance kit (:func:`pebench.testing.assert_conforms`) and a property test of that hook on it. Both pass as
written. Errors (a bad NAME, a NAME taken by a built-in, a file already there, an unknown kind, a ``--dir`` this process
cannot write in) are one line and write nothing; existing files are never overwritten."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from string import Template

from pebench.errors import PebenchError
from pebench.registry import NAME_RULE, Registry, valid_name
from pebench.store.writable import check_directory

KINDS = ("encoding", "task")

ENCODING = Template('''\
"""${name}: a linear distance penalty on the attention scores, one fixed slope shared by every head (a starting
point written by ``pebench new encoding ${name}``; replace it with your method).

Formula (write your encoding's definition here, with the equation numbers of its paper): the score of query i on
key j (j <= i) gets the bias

    b(i, j) = -slope * (i - j)

so it depends on the positions only through their difference: the encoding is relative (family "bias") and the
conformance kit checks that shifting every position leaves the logits unchanged.

Citation (the paper, its arXiv id and the section the formula comes from): this fixed-slope bias is ALiBi with one
slope for every head (Press et al., "Train Short, Test Long", ICLR 2022, arXiv:2108.12409, section 3).

Check it with ``pebench check ${name}.py`` and ``pytest test_${name}.py``; run it with
``pebench run --plugin ${name}.py --encoding ${name} --task k_back``. The hooks and options are described in
pebench's docs/extending.md ("Adding an encoding").
"""

from __future__ import annotations

from typing import ClassVar

import torch
from pebench.encodings import PositionalEncoding, register
from pebench.encodings.base import relative_distances
from pebench.options import Option
from torch import Tensor


@register
class ${cls}(PositionalEncoding):
    """One linear distance penalty, ``-slope * (i - j)``, added to every head's attention scores."""

    name = "${name}"  # the suite parameter: --encoding ${name}
    version = "1"  # bump it when the formula changes (results and checkpoints are keyed by it)
    family = "bias"  # absolute, rotary, bias, content, none or wrapper (FAMILIES in pebench/encodings/base.py)
    description = "linear distance penalty on attention scores, one fixed slope for every head"
    paper = "Press et al. 2022, arXiv:2108.12409 (ALiBi with one slope)"
    options: ClassVar[dict[str, Option]] = {
        "slope": Option(0.5, "the penalty per token of distance", float, low=0.0, high=100.0),
    }
    bias_shared_by_layers = True  # attn_bias ignores q, k and layer: computed once per forward pass

    # The hook this encoding implements. The other hooks of PositionalEncoding keep their no-op defaults; override
    # the ones your method needs (docs/extending.md, "Adding an encoding"). A variant is a keyword of its hook, passed
    # only to an override that names it (a capability such as reads_hidden is derived from that: never declare it):
    #   embed(positions): a (T, d_model) vector added to the token embeddings (absolute encodings); with annotations
    #     and generator, a vector from the task's per-token annotations (declare needs);
    #   transform_qk(q, k, positions, layer): rotate or extend q and k (rotary; set qk_dim/attn_scale on a new width);
    #     with hidden (the hidden states) or state (the state from init_state / state_values / update_state);
    #   attn_bias: with hidden, a bias from the hidden states (per_key: as a vector); with rows, by blocks of rows;
    #   positions(batch_size, length, generator, train): the positions of a training or evaluation batch;
    #   configure_eval(train_length, eval_length): adapt to the evaluation length before evaluating;
    #   on_step(step, total_steps): follow the training schedule.
    # Scores or weights other than q·kᵀ and softmax: an attention kernel of your own (kernel = NAME).
    def attn_bias(self, q: Tensor, k: Tensor, positions: Tensor, layer: int) -> Tensor:
        """``b(i, j) = -slope * |i - j|``: ``(T, T)`` for shared positions ``(T,)``, ``(B, 1, T, T)`` for per-sample
        positions ``(B, T)`` (the absolute value changes only the entries j > i, which the causal mask hides)."""
        return -self.opts["slope"] * relative_distances(positions).abs().to(torch.float32)
''')

ENCODING_TEST = Template('''\
"""Tests of the ${name} encoding (written by ``pebench new encoding ${name}``): the conformance kit, and the formula
of its one hook checked entry by entry."""

from __future__ import annotations

from pathlib import Path

import torch
from pebench import encodings, plugins
from pebench.encodings import EncodingContext, PositionalEncoding
from pebench.testing import assert_conforms

PLUGIN = Path(__file__).resolve().with_name("${name}.py")


def build(**options: float) -> PositionalEncoding:
    """The encoding of the plugin file (loaded once, as --plugin loads it) for a small model."""
    plugins.load(str(PLUGIN))
    return encodings.get("${name}")(EncodingContext(d_model=16, n_heads=2, n_layers=1, max_len=64), **options)


def test_${name}_keeps_the_contract() -> None:
    assert_conforms(PLUGIN, speed=False)  # every property but the timed one (pebench check ${name}.py runs it too)


def test_${name}_bias_is_minus_slope_times_the_distance() -> None:
    slope, length = 0.25, 7
    encoding = build(slope=slope)
    bias = encoding.attn_bias(None, None, torch.arange(length), 0)
    assert bias.shape == (length, length)
    for i in range(length):
        for j in range(i + 1):
            assert bias[i, j].item() == -slope * (i - j)
    shifted = encoding.attn_bias(None, None, torch.arange(length) + 100, 0)
    assert torch.equal(bias, shifted)  # relative: only i - j matters
''')

TASK = Template('''\
"""${name}: at every position t >= k, output the token seen k positions earlier (a starting point written by
``pebench new task ${name}``; replace it with your task).

Definition (write your task's here: the inputs, the targets and which positions are scored). Tokens
``x_0 .. x_{T-1}`` are i.i.d. uniform over ``0 .. V-1`` (V = 16). With ``k`` the option (default 2, ``k >= 1``):

    y_t = x_{t-k}    for t >= k,
    y_t = IGNORE     for t <  k   (nothing to recall yet; IGNORE positions are not scored).

Chance level is ``1 / V``; the shortest sequence with a scored position has ``k + 1`` tokens. The answer is fixed by
a relative offset alone, never by content: a positional retrieval probe, as pebench's built-in ``k_back``.

Citation (where the task comes from): cf. Olsson et al., "In-context Learning and Induction Heads", 2022,
arXiv:2209.11895 (previous-token heads).

Check it with ``pebench check ${name}.py`` and ``pytest test_${name}.py``; run it with
``pebench run --plugin ${name}.py --task ${name} --encoding alibi``. Tasks are described in pebench's
docs/extending.md ("Adding a task") and docs/tasks.md.
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from pebench.options import Option
from pebench.tasks import IGNORE, Batch, Task, register

N_TOKENS = 16


@register
class ${cls}(Task):
    """Recall the token ``k`` positions back, at every position that has one."""

    name = "${name}"  # the suite parameter: --task ${name}
    version = "1"  # bump it when the generator changes (results are keyed by it)
    description = "at every position t >= k, recall the token k (2) positions back"
    paper = "cf. Olsson et al. 2022, arXiv:2209.11895"
    options: ClassVar[dict[str, Option]] = {
        "k": Option(2, "how many positions back to recall", type=int, low=1, high=1024),
    }
    metric = "accuracy"  # accuracy, exact_match or perplexity (pebench/metrics.py)
    train_length = 32  # evaluated at 1x, 2x, 4x (quick tier) and up to 16x (full tier): eval_lengths(tier)

    # Other things a task may declare (docs/extending.md, "Adding a task"):
    #   eval_lengths(tier): other evaluation lengths than train_length x (1, 2, 4) / (1, 2, 4, 8, 16);
    #   eval_splits: evaluation splits besides "test" (sample's split argument);
    #   default_steps: the training budget when the user gives no --steps;
    #   annotations: per-token integers for encodings that read them (Batch(..., annotations={...})).

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.min_length = self.opts["k"] + 1  # shorter sequences have nothing to score: check_length refuses them

    @property
    def vocab_size(self) -> int:
        return N_TOKENS

    @property
    def chance_level(self) -> float:
        return 1.0 / N_TOKENS

    def sample(self, batch_size: int, length: int, generator: torch.Generator, split: str = "train") -> Batch:
        """``batch_size`` sequences of ``length`` tokens, a function of ``generator`` alone."""
        self.check_length(length)
        self.check_split(split)
        k = self.opts["k"]
        inputs = torch.randint(0, N_TOKENS, (batch_size, length), generator=generator)
        targets = torch.full_like(inputs, IGNORE)
        targets[:, k:] = inputs[:, :-k]
        return Batch(inputs, targets)
''')

TASK_TEST = Template('''\
"""Tests of the ${name} task (written by ``pebench new task ${name}``): the conformance kit, and the labels checked
against the definition position by position."""

from __future__ import annotations

from pathlib import Path

import torch
from pebench import plugins, tasks
from pebench.tasks import IGNORE, Task
from pebench.testing import assert_conforms

PLUGIN = Path(__file__).resolve().with_name("${name}.py")


def build(**options: int) -> Task:
    """The task of the plugin file (loaded once, as --plugin loads it)."""
    plugins.load(str(PLUGIN))
    return tasks.build("${name}", options)


def test_${name}_keeps_the_contract() -> None:
    assert_conforms(PLUGIN)


def test_${name}_targets_are_the_token_k_back() -> None:
    k, length = 3, 20
    task = build(k=k)
    batch = task.sample(4, length, torch.Generator().manual_seed(0))
    assert batch.inputs.shape == batch.targets.shape == (4, length)
    for row, target in zip(batch.inputs.tolist(), batch.targets.tolist(), strict=True):
        assert target == [IGNORE] * k + row[: length - k]
    again = task.sample(4, length, torch.Generator().manual_seed(0))
    assert torch.equal(batch.inputs, again.inputs)  # a function of the generator alone
''')

TEMPLATES: dict[str, tuple[Template, Template]] = {"encoding": (ENCODING, ENCODING_TEST), "task": (TASK, TASK_TEST)}


def _registry(kind: str) -> Registry[object]:
    # imported here: the registries load every built-in (and torch), which the command line's parser does not need
    from pebench.encodings.registry import ENCODINGS
    from pebench.tasks.registry import TASKS

    return ENCODINGS if kind == "encoding" else TASKS  # type: ignore[return-value]


def class_name(name: str) -> str:
    """``my_pe`` -> ``MyPe``: the class of the starting file."""
    return "".join(part[:1].upper() + part[1:] for part in name.split("_") if part) or "New"


def plan(kind: str, name: str, directory: Path) -> dict[Path, str]:
    """The files ``pebench new KIND NAME --dir DIRECTORY`` writes, path -> text; a one-line
    :class:`~pebench.errors.PebenchError` naming the fix when it cannot (and then nothing is written)."""
    if kind not in KINDS:
        raise PebenchError(f"unknown kind {kind!r}; valid kinds: {', '.join(KINDS)} (pebench new encoding|task NAME)")
    if not valid_name(name):
        raise PebenchError(f"invalid NAME {name!r}: give {NAME_RULE}, e.g. my_pe")
    registry = _registry(kind)
    if name in registry.names():
        module = getattr(registry.get(name), "__module__", "")
        raise PebenchError(f"{kind} {name!r} clashes with the {kind} {name!r} from {registry.source(name)} {module}; "
                           "choose another NAME")  # fmt: skip
    paths = [directory / f"{name}.py", directory / f"test_{name}.py"]
    for path in paths:
        if path.exists():
            raise PebenchError(f"{path} already exists; pebench new never overwrites: remove it, or choose another "
                               "NAME or --dir")  # fmt: skip
    if name in sys.stdlib_module_names or name in sys.builtin_module_names or _importable(name):
        raise PebenchError(f"NAME {name!r} is the name of an importable module, which {name}.py would shadow; choose "
                           "another NAME")  # fmt: skip
    plugin, test = TEMPLATES[kind]
    values = {"name": name, "cls": class_name(name)}
    return {paths[0]: plugin.substitute(values), paths[1]: test.substitute(values)}


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def write_new(kind: str, name: str, directory: Path) -> list[Path]:
    """Write the starting file and its test (see :func:`plan`); return their paths."""
    files = plan(kind, name, directory)
    check_directory(directory, "--dir")
    directory.mkdir(parents=True, exist_ok=True)
    for path, text in files.items():
        with path.open("x") as f:  # never overwrite, even if the file appeared since the check
            f.write(text)
    return list(files)


def _new(args: argparse.Namespace) -> int:
    plugin, test = write_new(args.kind, args.name, Path(args.dir))
    run = f"--encoding {args.name} --task k_back" if args.kind == "encoding" else f"--task {args.name}"
    print(f"wrote {plugin} and {test}; next: pytest {test}, pebench check {plugin}, "
          f"pebench run --plugin {plugin} {run}")  # fmt: skip
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """The ``new`` subcommand of the ``pebench`` command."""
    p = sub.add_parser("new", help="write a starting plugin file for an encoding or a task, and its test",
                       description=__doc__)  # fmt: skip
    p.add_argument("kind", metavar="encoding|task", help="what to write: encoding or task")
    p.add_argument("name", metavar="NAME", help="its name: a lower-case Python identifier (NAME.py, test_NAME.py)")
    p.add_argument("--dir", default=".", help="where to write the two files (default: the current directory)")
    p.set_defaults(func=_new)
