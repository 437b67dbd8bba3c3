"""Validation points on the learning curve (issue 14, item 4): at every curve point the task's metric on held-out
batches at the training length and at 2x; deterministic; the trained model is the same with or without them; lengths
the model or the task cannot take are left out; packed seeds carry their own."""

from __future__ import annotations

import torch

from pebench import encodings, tasks
from pebench.encodings import EncodingContext
from pebench.engine import training as tr
from pebench.engine.packing import train_packed
from pebench.models import ModelConfig, Transformer

CPU = torch.device("cpu")


def build(task: tasks.Task, seed: int = 0, encoding: str = "rope", max_len: int | None = None) -> Transformer:
    torch.manual_seed(seed)
    ctx = EncodingContext(d_model=16, n_heads=2, n_layers=1, max_len=max_len or task.max_length(),
                          train_length=task.train_length)  # fmt: skip
    return Transformer(ModelConfig(vocab_size=task.vocab_size, d_model=16, n_layers=1, n_heads=2),
                       encodings.build(encoding, ctx))  # fmt: skip


def run(task: tasks.Task, val_batches: int, **kw: object) -> tuple[Transformer, tr.TrainInfo]:
    model = build(task, **kw)  # type: ignore[arg-type]
    cfg = tr.TrainConfig(steps=12, batch_size=4, curve_every=4, val_batches=val_batches)
    return model, tr.train(model, task, cfg, seed=0, device=CPU, progress=False)


def test_every_curve_point_carries_validation_at_1x_and_2x() -> None:
    task = tasks.build("k_back")
    _, info = run(task, 2)
    assert [p["step"] for p in info.curve] == [4, 8, 12]
    for p in info.curve:
        assert set(p) == {"step", "loss", "accuracy", "val_accuracy_1x", "val_accuracy_2x"}
        assert 0.0 <= p["val_accuracy_1x"] <= 1.0 and 0.0 <= p["val_accuracy_2x"] <= 1.0


def test_validation_is_deterministic_and_leaves_training_unchanged() -> None:
    task = tasks.build("k_back")
    with_val, info = run(task, 2)
    again, info_again = run(task, 2)
    without, info_without = run(task, 0)
    assert info.curve == info_again.curve
    assert all(not any(k.startswith("val_") for k in p) for p in info_without.curve)
    # the same trajectory: identical weights, losses and training accuracies
    assert [{k: p[k] for k in ("step", "loss", "accuracy")} for p in info.curve] == info_without.curve
    assert info.final_loss == info_without.final_loss
    for (name, p), q in zip(with_val.named_parameters(), without.parameters(), strict=True):
        assert torch.equal(p, q), name
    assert with_val.training is False  # the loop still ends in eval mode


def test_validation_is_not_part_of_the_stored_configuration() -> None:
    assert tr.TrainConfig(val_batches=0).to_dict() == tr.TrainConfig(val_batches=5).to_dict()
    assert "val_batches" not in tr.TrainConfig().to_dict()


def test_2x_is_left_out_where_the_model_cannot_take_it() -> None:
    task = tasks.build("k_back")
    _, info = run(task, 1, max_len=task.tokens(task.train_length))
    assert all("val_accuracy_1x" in p and "val_accuracy_2x" not in p for p in info.curve)


def test_the_key_names_the_task_metric() -> None:
    task = tasks.build("add_nocarry")
    assert task.metric == "exact_match"
    _, info = run(task, 1)
    assert {"val_exact_match_1x", "val_exact_match_2x"} <= set(info.curve[-1])


def test_packed_seeds_carry_their_own_validation_points() -> None:
    task = tasks.build("k_back")
    cfg = tr.TrainConfig(steps=8, batch_size=4, curve_every=4, val_batches=1)
    alone = [tr.train(build(task, s), task, cfg, seed=s, device=CPU, progress=False) for s in (0, 1)]
    packed = train_packed([build(task, s) for s in (0, 1)], task, cfg, [0, 1], CPU, progress=False)
    for got, want in zip(packed, alone, strict=True):
        for p, q in zip(got.curve, want.curve, strict=True):
            assert set(p) == set(q)
            assert abs(p["val_accuracy_1x"] - q["val_accuracy_1x"]) <= 0.02
            assert abs(p["val_accuracy_2x"] - q["val_accuracy_2x"]) <= 0.02


def test_the_suite_option_reaches_the_training_config() -> None:
    import pytest

    from pebench.engine.settings import Settings
    from pebench.errors import PebenchError

    task = tasks.build("k_back")
    assert Settings().train_config(task).val_batches == tr.TrainConfig.val_batches == 2
    assert Settings(val_batches=0).train_config(task).val_batches == 0
    with pytest.raises(PebenchError, match="--val-batches"):
        Settings(val_batches=-1).check()
