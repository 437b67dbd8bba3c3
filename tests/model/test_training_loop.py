"""The training loop keeps values on the device (one read per learning-curve point), still catches divergence, and
records its precision; xdist workers spread over the GPUs (issue 17, item 2)."""

from __future__ import annotations

import sys

import pytest
import torch

from pebench import encodings, tasks
from pebench.encodings import EncodingContext
from pebench.engine import training as tr
from pebench.engine.device import worker_device
from pebench.engine.settings import Settings
from pebench.errors import ConfigError
from pebench.models import ModelConfig, Transformer


def model_and_task(encoding: str = "rope") -> tuple[Transformer, tasks.Task]:
    task = tasks.build("k_back")
    torch.manual_seed(0)
    ctx = EncodingContext(d_model=16, n_heads=2, n_layers=1, max_len=task.max_length(), train_length=task.train_length)
    model = Transformer(ModelConfig(vocab_size=task.vocab_size, d_model=16, n_layers=1, n_heads=2),
                        encodings.build(encoding, ctx))  # fmt: skip
    return model, task


def test_values_are_read_back_once_per_curve_point(monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[list[float]] = []
    original = tr.read_back

    def counting(values: torch.Tensor) -> list[float]:
        out = original(values)
        reads.append(out)
        return out

    monkeypatch.setattr(tr, "read_back", counting)
    # any other read of a tensor's value by the loop (.item(), .tolist(), bool(), float(), int()) would be a host sync
    # on a GPU: count them (the optimiser's reads of its CPU step counters are not the loop's and sync nothing)
    other: list[str] = []
    for method in ("item", "tolist", "__bool__", "__float__", "__int__"):
        original_method = getattr(torch.Tensor, method)

        def spy(self: torch.Tensor, *a: object, _m: str = method, _f=original_method) -> object:  # noqa: ANN001
            caller = sys._getframe(1)
            if caller.f_code.co_filename == tr.__file__ and caller.f_code.co_name != "read_back":
                other.append(f"{_m} in {caller.f_code.co_name}")
            return _f(self, *a)

        monkeypatch.setattr(torch.Tensor, method, spy)
    model, task = model_and_task()
    info = tr.train(model, task, tr.TrainConfig(steps=23, batch_size=4, curve_every=5), seed=0,
                    device=torch.device("cpu"), progress=False)  # fmt: skip
    assert [p["step"] for p in info.curve] == [5, 10, 15, 20, 23]
    assert len(reads) == len(info.curve)  # steps 5, 10, 15, 20 and the last
    # validation (on by default) runs at the curve points only and its values come back in the same read
    assert all({"val_accuracy_1x", "val_accuracy_2x"} <= set(p) for p in info.curve)
    assert other == []
    assert info.status == "ok" and info.steps == 23


def test_curve_points_average_the_steps_since_the_last_point() -> None:
    """The curve equals what the per-step losses give when recomputed by hand from the same seed and data."""
    model, task = model_and_task()
    cfg = tr.TrainConfig(steps=6, batch_size=4, curve_every=3)
    info = tr.train(model, task, cfg, seed=0, device=torch.device("cpu"), progress=False)
    twin, _ = model_and_task()
    from pebench.hashing import derive_seed

    gen = torch.Generator().manual_seed(derive_seed(0, "train", task.name))
    pos_gen = torch.Generator().manual_seed(derive_seed(0, "positions", task.name))
    opt = tr.make_optimizer(twin, cfg)
    losses, accs = [], []
    for step in range(cfg.steps):
        for group in opt.param_groups:
            group["lr"] = tr.lr_at(step, cfg)
        batch = tr.training_batch(task, twin, cfg.batch_size, gen, pos_gen, torch.device("cpu"))
        loss, correct, scored = tr.masked_loss_and_correct(twin(batch.inputs, batch.positions), batch.targets)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(twin.parameters(), cfg.grad_clip)
        opt.step()
        losses.append(float(loss.detach()))
        accs.append((int(correct.sum()), int(scored.sum())))
    for i, point in enumerate(info.curve):
        chunk = slice(3 * i, 3 * i + 3)
        assert point["loss"] == pytest.approx(sum(losses[chunk]) / 3, rel=1e-6)
        c, s = (sum(x) for x in zip(*accs[chunk], strict=True))
        assert point["accuracy"] == pytest.approx(c / s)
    assert info.final_loss == pytest.approx(losses[-1], rel=1e-6)


def test_divergence_is_caught_at_the_next_curve_point() -> None:
    model, task = model_and_task()
    info = tr.train(model, task, tr.TrainConfig(steps=40, batch_size=4, lr=1e30, curve_every=10), seed=0,
                    device=torch.device("cpu"), progress=False)  # fmt: skip
    assert info.status == "diverged"
    assert "non-finite" in info.message
    bad = int(info.message.rsplit(" ", 1)[1])
    assert info.steps == bad < 40
    assert all(p["step"] <= bad for p in info.curve)  # no curve point after the first non-finite step


@pytest.mark.parametrize("precision", ["bf16", "tf32"])
def test_precision_trains_and_is_recorded(precision: str) -> None:
    model, task = model_and_task()
    cfg = tr.TrainConfig(steps=4, batch_size=4, precision=precision)
    info = tr.train(model, task, cfg, seed=0, device=torch.device("cpu"), progress=False)
    assert info.status == "ok"
    assert cfg.to_dict()["precision"] == precision
    assert "precision" not in tr.TrainConfig().to_dict()  # fp32: the configuration (and its hash) as before
    assert torch.get_float32_matmul_precision() == "highest"  # restored after training
    assert Settings(precision=precision).train_config(task).precision == precision


def test_unknown_precision_is_a_one_line_error() -> None:
    with pytest.raises(ConfigError, match="precision"):
        tr.TrainConfig(precision="fp8")


def test_xdist_workers_spread_over_the_gpus() -> None:
    cuda = torch.device("cuda")
    assert [worker_device(cuda, f"gw{i}", count=3).index for i in range(5)] == [0, 1, 2, 0, 1]
    assert worker_device(cuda, "gw7", count=1) == torch.device("cuda", 0)  # several workers share one GPU
    assert worker_device(torch.device("cuda", 1), "gw0", count=3) == torch.device("cuda", 1)  # explicit index kept
    assert worker_device(cuda, "", count=3) == cuda  # not under xdist
    assert worker_device(torch.device("cpu"), "gw3", count=3) == torch.device("cpu")
