"""A model or training knob is declared once, as a field of ModelConfig or TrainConfig with ``metadata=flag(...)``;
everything else follows from that declaration (issue 31, item 3): the flag with the field's default, the Settings
keyword and attribute, the value in the model's config (hashed), and the option stored with each run."""

import dataclasses

import pytest

from pebench.case import Case
from pebench.engine.runner import Runner
from pebench.engine.settings import CONFIG_FIELDS, FLAGS, Settings, dests
from pebench.engine.train_config import TrainConfig
from pebench.hashing import config_hash
from pebench.models import ModelConfig
from pebench.options import FLAG


def _changed(value):
    return not value if isinstance(value, bool) else value * 2 if isinstance(value, int | float) else value


def test_every_flagged_field_is_a_flag_a_setting_and_a_config_value():
    flagged = {f.name for cls in (ModelConfig, TrainConfig) for f in dataclasses.fields(cls) if FLAG in f.metadata}
    assert flagged == set(CONFIG_FIELDS) >= {"d_model", "n_heads", "batch_size", "lr", "weight_decay", "precision",
                                             "stop", "val_batches"}  # fmt: skip
    task = Runner(Settings()).task("k_back")
    for name, (cls, f) in CONFIG_FIELDS.items():
        flag = FLAGS[name]
        assert flag.options["default"] == f.default == getattr(Settings, name) == getattr(Settings(), name), name
        assert name in dests("suite") and name in dests("setting"), name
        assert (name in dests("run")) == f.metadata[FLAG].stored, name
        if f.metadata[FLAG].choices is None:
            value = _changed(f.default)
            s = Settings(**{name: value})
            config = s.model_config(task) if cls is ModelConfig else s.train_config(task)
            assert getattr(config, name) == value != f.default, name


def test_a_new_knob_reaches_the_stored_config_and_its_hash():
    """--weight-decay (one declaration in TrainConfig): its value is in the case's configuration, so results with
    another value are never reused or compared as the same; at the default, the configuration is what it was."""
    case = Case("rope", "k_back", 64)
    default = Runner(Settings()).describe(case)
    other = Runner(Settings(weight_decay=0.1)).describe(case)
    assert default["train"]["weight_decay"] == 0.01 and other["train"]["weight_decay"] == 0.1
    assert config_hash(default) != config_hash(other)
    assert {k: v for k, v in other["train"].items() if k != "weight_decay"} == \
        {k: v for k, v in default["train"].items() if k != "weight_decay"}  # fmt: skip


def test_settings_refuse_an_unknown_keyword_naming_the_valid_ones():
    with pytest.raises(TypeError, match=r"Settings has no setting 'learning_rate'; valid: .*\blr\b"):
        Settings(learning_rate=1e-3)


def test_settings_copies_keep_their_own_values():
    a = Settings(lr=1e-2)
    b = dataclasses.replace(a, d_model=64)
    b.lr = 5e-3
    assert (a.lr, a.d_model, b.lr, b.d_model) == (1e-2, ModelConfig.d_model, 5e-3, 64)
