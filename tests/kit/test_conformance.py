"""The conformance kit (issue 29, item 3): ``pebench.testing`` and ``pebench check`` pass every built-in encoding and
task, and fail -- naming the property, with the number measured -- encodings that leak the future, depend on the
batch or are non-deterministic, and classes whose declarations contradict their hooks or whose batches are not a
function of the generator."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from plugin_files import BROKEN_ENCODINGS, POSITION_BLIND, WRONG_SHAPE, write

from pebench import encodings, tasks
from pebench.encodings.alibi import ALiBi
from pebench.encodings.base import DERIVED_CAPABILITIES, RETIRED_HOOKS, EncodingContext, PositionalEncoding, Wrapper
from pebench.tasks.k_back import KBack
from pebench.testing import FAIL, PASS, SKIP, assert_conforms, check, check_encoding, check_task

ENCODING_PROPERTIES = ["hook shapes", "causality", "batch independence", "determinism", "checkpoint round-trip",
                       "option errors", "shift invariance", "uses position", "capabilities",
                       "throughput vs rope"]  # fmt: skip
TASK_PROPERTIES = ["declarations", "batch layout", "determinism", "lengths", "option errors"]
CONTEXT = EncodingContext(d_model=16, n_heads=2, n_layers=1, max_len=32)
BROKEN = {"leaks_future": "causality", "batch_dependent": "batch independence", "non_deterministic": "determinism"}


@pytest.mark.parametrize("name", encodings.available())
def test_every_built_in_encoding_conforms(name):
    report = check_encoding(name)
    assert report.passed, "\n".join(report.lines())
    assert [p.name for p in report.properties] == ENCODING_PROPERTIES
    shift = report.properties[ENCODING_PROPERTIES.index("shift invariance")]
    cls = encodings.get(name)
    relative = cls.family in ("rotary", "bias") and getattr(cls, "shift_invariant", True)  # FIRE declares it is not
    assert shift.status == (PASS if relative else SKIP), shift
    position = report.properties[ENCODING_PROPERTIES.index("uses position")]
    assert position.status == PASS and (float(position.measured) <= 1e-5) == cls.position_free, position


@pytest.mark.parametrize("name", tasks.available())
def test_every_built_in_task_conforms(name):
    report = check_task(name)
    assert report.passed, "\n".join(report.lines())
    assert [p.name for p in report.properties] == TASK_PROPERTIES


def test_each_broken_encoding_fails_its_property_only(isolated, tmp_path):
    reports = {r.name: r for r in check(write(tmp_path, "broken.py", BROKEN_ENCODINGS), speed=False)}
    assert sorted(reports) == sorted(BROKEN)
    for name, prop in BROKEN.items():
        report = reports[name]
        assert report.failed == [prop], "\n".join(report.lines())
        (failed,) = [p for p in report.properties if p.status == FAIL]
        assert float(failed.measured) > 10 * 1e-5  # well past the tolerance, not a rounding accident
        assert report.lines()[0] == f"encoding {name} (plugin {tmp_path / 'broken.py'}): FAILS {prop}"


@pytest.mark.slow
def test_pebench_check_prints_one_line_per_property_and_fails_on_broken_encodings(tmp_path):
    write(tmp_path, "broken.py", BROKEN_ENCODINGS)
    proc = subprocess.run([sys.executable, "-m", "pebench", "check", "broken.py", "alibi", "k_back",
                           "--no-throughput"], cwd=tmp_path, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    head = lines.index(f"encoding leaks_future (plugin {tmp_path / 'broken.py'}): FAILS causality")
    assert lines[head + 2].split()[:2] == ["FAIL", "causality"]
    assert [line.split()[0] for line in lines[head + 1 : head + 10]] == ["PASS", "FAIL", "PASS", "PASS", "PASS",
                                                                         "PASS", "SKIP", "PASS", "PASS"]  # fmt: skip
    assert "encoding alibi (built-in): conforms" in lines and "task k_back (built-in): conforms" in lines
    assert lines[-1] == ("2 of 5 conform; failing: encoding batch_dependent (batch independence); encoding "
                         "leaks_future (causality); encoding non_deterministic (determinism)")  # fmt: skip
    ok = subprocess.run([sys.executable, "-m", "pebench", "check", "alibi", "--no-throughput"], cwd=tmp_path,
                        capture_output=True, text=True, timeout=300)  # fmt: skip
    assert ok.returncode == 0 and ok.stdout.splitlines()[-1] == "1 of 1 conform"


def test_assert_conforms_for_the_users_own_tests(isolated, tmp_path):
    assert_conforms(ALiBi, speed=False)  # a class
    assert_conforms("k_back")  # a registered name
    with pytest.raises(AssertionError, match=r"(?m)^  FAIL  determinism +[0-9.e-]+  max relative difference"):
        assert_conforms(write(tmp_path, "broken.py", BROKEN_ENCODINGS), speed=False)


class KeyBiasAlone(PositionalEncoding):
    """Gives a per-key bias without the bias from the hidden states (attn_bias names per_key, not hidden): the model
    would never ask for it."""

    name = "key_bias_alone"
    family = "content"
    position_free = True

    def attn_bias(self, q, k, positions, layer, *, per_key=False):
        return None


class UnknownKernel(PositionalEncoding):
    """Names an attention kernel nobody registered: the model could not run it."""

    name = "unknown_kernel"
    family = "none"
    position_free = True
    kernel = "no_such_kernel"


class StateNeverUpdated(PositionalEncoding):
    """Starts a state (init_state) but never updates it: every layer would see the first layer's."""

    name = "state_never_updated"
    family = "content"
    position_free = True

    def init_state(self, positions, batch_size):
        return torch.zeros(1, 1)


class StateValuesWithoutState(PositionalEncoding):
    """Implements state_values without init_state: the model would never carry a state."""

    name = "stateless_values"
    family = "content"
    position_free = True

    def state_values(self, state, layer):
        return state


class StateTransformWithoutState(PositionalEncoding):
    """Transforms q and k with a state (transform_qk names state) without init_state: no state would be carried."""

    name = "stateless_transform"
    family = "content"
    position_free = True

    def transform_qk(self, q, k, positions, layer, *, state=None):
        return q, k


class AnnotationsWithoutNeeds(PositionalEncoding):
    """Reads annotations in embed without declaring needs: the model would never pass them."""

    name = "annotations_without_needs"
    family = "none"
    position_free = True

    def embed(self, positions, annotations=None, generator=None):
        return None


class GlobalRandomTask(KBack):
    """Draws its tokens from the global generator, not from the one it is given."""

    name = "global_random"

    def sample(self, batch_size, length, generator, split="train"):
        batch = super().sample(batch_size, length, generator, split)
        batch.inputs = torch.randint(0, self.vocab_size, batch.inputs.shape)
        return batch


def test_capabilities_and_task_determinism_fail_by_name():
    report = check_encoding(KeyBiasAlone, speed=False)
    assert report.failed == ["capabilities"]
    (cap,) = [p for p in report.properties if p.name == "capabilities"]
    assert cap.measured == "5/6" and cap.detail == "inconsistent: attn_bias: per_key => hidden"
    for cls, rule in ((StateNeverUpdated, "init_state <=> update_state"),
                      (StateValuesWithoutState, "transform_qk(state) or state_values => init_state"),
                      (StateTransformWithoutState, "transform_qk(state) or state_values => init_state"),
                      (AnnotationsWithoutNeeds, "needs <=> embed(annotations)")):  # fmt: skip
        (cap,) = [p for p in check_encoding(cls, speed=False).properties if p.name == "capabilities"]
        assert cap.status == FAIL and cap.measured == "5/6" and cap.detail == f"inconsistent: {rule}"
    (line,) = [x for x in check_encoding(UnknownKernel, speed=False).lines() if x.startswith("  FAIL")]
    assert "names the attention kernel 'no_such_kernel'; registered: fused, path, rows, stick_breaking" in line
    assert report.source == f"module {__name__}"
    report = check_task(GlobalRandomTask)
    assert report.failed == ["determinism"], "\n".join(report.lines())


NAMING = {  # an override naming each keyword (None: any override)
    None: lambda self, positions, batch_size: None,
    "rows": lambda self, q, k, positions, layer, *, rows=None: None,
    "hidden": lambda self, q, k, positions, layer, *, hidden=None: None,
    "per_key": lambda self, q, k, positions, layer, *, per_key=False: None,
    "state": lambda self, q, k, positions, layer, *, state=None: None,
}


@pytest.mark.parametrize("flag", DERIVED_CAPABILITIES)
def test_a_capability_is_derived_from_the_override_naming_its_keyword_and_a_declaration_is_refused(flag):
    hook, keyword = DERIVED_CAPABILITIES[flag]
    base = getattr(PositionalEncoding, hook)
    overriding = type("Overriding", (PositionalEncoding,), {hook: base})
    assert getattr(PositionalEncoding, flag) is False and getattr(overriding, flag) is False  # the base's own hook
    plain = type("Plain", (PositionalEncoding,), {hook: lambda self, *args, **kwargs: None})
    assert getattr(plain, flag) is (keyword is None)  # **kwargs names no keyword
    overriding = type("Overriding", (PositionalEncoding,), {hook: NAMING[keyword]})
    assert getattr(overriding, flag) is True and getattr(type("Sub", (overriding,), {}), flag) is True
    assert getattr(overriding(CONTEXT), flag) is True  # on an instance alike
    with pytest.raises(AttributeError, match="derived"):
        setattr(overriding(CONTEXT), flag, False)
    refused = rf"^encoding class Declares declares {flag}: that capability is now derived from its {hook}"
    with pytest.raises(TypeError, match=refused + r".*; remove the declaration$"):
        type("Declares", (PositionalEncoding,), {flag: True})


@pytest.mark.parametrize("hook", RETIRED_HOOKS)
def test_a_class_defining_a_hook_of_the_former_contract_is_a_one_line_error_naming_its_new_role(hook):
    with pytest.raises(TypeError) as err:
        type("Former", (PositionalEncoding,), {hook: lambda self, *args: None})
    message = str(err.value)
    assert "\n" not in message and message == (f"encoding class Former defines {hook}, a hook of the former contract; "
                                                f"implement instead: {RETIRED_HOOKS[hook]} (docs/extending.md)")
    role = RETIRED_HOOKS[hook].split("(")[0]
    assert role in ("embed", "transform_qk", "attn_bias", "positions", "an attention kernel, kernel = NAME ")
    with pytest.raises(TypeError, match=f"defines {hook}, a hook of the former contract"):
        type("FormerWrapper", (Wrapper,), {hook: lambda self, *args: None})  # a wrapper too


def test_a_class_that_cannot_be_built_fails_builds_in_one_line():
    from pebench.testing import check_encoding, check_task

    class Unbuildable(ALiBi):
        name = "unbuildable_test_encoding"

        def __init__(self, *args: object, **kwargs: object) -> None:
            raise RuntimeError("no table for you\nsecond line")

    class UnbuildableTask(KBack):
        name = "unbuildable_test_task"

        def __init__(self, **options: object) -> None:
            raise ValueError("bad task")

    for report in (check_encoding(Unbuildable, speed=False), check_task(UnbuildableTask)):
        assert not report.passed and report.failed == ["builds"], report.lines()
        (prop,) = report.properties
        assert prop.detail.count("\n") == 0 and prop.detail.split(": ")[0] in ("RuntimeError", "ValueError")


def test_a_position_blind_encoding_fails_uses_position(isolated, tmp_path):
    """An attention bias of zeros in family "bias": every other property passes (it is causal, deterministic and
    shift-invariant), only ``uses position`` names it."""
    (report,) = check(write(tmp_path, "blind.py", POSITION_BLIND), speed=False)
    assert report.failed == ["uses position"], "\n".join(report.lines())
    (prop,) = [p for p in report.properties if p.name == "uses position"]
    assert float(prop.measured) <= 1e-5 and "declares position_free = True" in prop.detail


def test_a_position_free_declaration_is_checked_too():
    """NoPE's declaration is measured (its logits stay put); ALiBi declaring it is caught."""

    class ClaimsNoPosition(ALiBi):
        name = "claims_no_position"
        position_free = True

    report = check_encoding(ClaimsNoPosition, speed=False)
    assert report.failed == ["uses position"], "\n".join(report.lines())
    (prop,) = [p for p in report.properties if p.name == "uses position"]
    assert float(prop.measured) > 1e-3 and prop.detail.endswith("(passes up to 1e-05)")


def test_a_hook_of_the_wrong_shape_is_one_line_naming_file_hook_and_shape(isolated, tmp_path):
    """The hook's value is checked where the model calls it, before a size mismatch deep in the attention; the other
    properties are not measured on a model that cannot run."""
    path = write(tmp_path, "wrong.py", WRONG_SHAPE)
    (report,) = check(path, speed=False)
    assert report.failed == ["hook shapes"] and len(report.properties) == 1, "\n".join(report.lines())
    (prop,) = report.properties
    assert (prop.measured, prop.detail) == ("attn_bias", (
        f"plugin {path}: encoding wrong_shape: attn_bias returned (2, 240, 241) torch.float32; expected None, "
        "(H, T, T) = (2, 240, 240) or (B, H, T, T) = (3, 2, 240, 240) (or broadcastable to it), a floating "
        "dtype"))  # fmt: skip
    assert report.lines()[0] == f"encoding wrong_shape (plugin {path}): FAILS hook shapes"


def test_a_variant_of_the_wrong_shape_is_named_with_its_keyword():
    """Each variant of a role has its own rule: the bias from the hidden states (``attn_bias(hidden)``) is one per
    sample, and its per-key form a vector."""

    class SharedHiddenBias(PositionalEncoding):
        name = "shared_hidden_bias"
        family = "content"
        position_indexed = False

        def attn_bias(self, q, k, positions, layer, *, hidden=None, per_key=False):
            if hidden is None:
                return None
            t = hidden.shape[1]
            return hidden.new_zeros(t, t + 1) if not per_key else hidden.new_zeros(hidden.shape[0], t)

    (prop,) = check_encoding(SharedHiddenBias, speed=False).properties
    assert prop.measured == "attn_bias(hidden)" and "attn_bias(hidden) returned (240, 241) torch.float32; expected " \
        "None or (B, H, T, T) = (3, 2, 240, 240)" in prop.detail  # fmt: skip


def test_a_hook_of_the_wrong_dtype_is_named_with_the_dtype_expected():
    class Float64QK(PositionalEncoding):
        name = "float64_qk"
        family = "rotary"

        def transform_qk(self, q, k, positions, layer):
            return q.double(), k.double()

    report = check_encoding(Float64QK, speed=False)
    assert report.failed == ["hook shapes"], "\n".join(report.lines())
    (prop,) = report.properties
    shape = "(3, 2, 240, 16)"
    assert prop.detail == (f"module {__name__}: encoding float64_qk: transform_qk returned ({shape} torch.float64, "
                           f"{shape} torch.float64); expected a pair (q, k) of {shape} and {shape} (B, H, T, qk_dim), "
                           "torch.float32")  # fmt: skip
