"""Stop when learned (issue 28, item 1) and ``--precision auto`` (item 2): the rule on a curve, a model that learns
its task quickly stops early with the weights its budget run had at that step, one that cannot learn trains to the
budget, packed seeds stop where they stop alone, and the rule and the resolved precision are part of the stored
configuration."""

from __future__ import annotations

import pytest
import torch

from pebench import encodings, tasks
from pebench.encodings import EncodingContext
from pebench.engine import device as pdevice
from pebench.engine.packing import train_packed
from pebench.engine.runner import Case, Runner
from pebench.engine.settings import Settings
from pebench.engine.stopping import STOP_REASONS, STOP_RULES, StopReason, StopRule, StopRuleName
from pebench.engine.train_config import TrainConfig
from pebench.engine.training import TrainInfo, train
from pebench.errors import ConfigError
from pebench.hashing import config_hash
from pebench.models import ModelConfig, Transformer

CPU = torch.device("cpu")


def points(accs: list[float], losses: list[float] | None = None) -> list[dict[str, float]]:
    losses = losses or [1.0] * len(accs)
    pairs = enumerate(zip(accs, losses, strict=True))
    return [{"step": 10 * (i + 1), "loss": loss, "accuracy": a} for i, (a, loss) in pairs]


def test_learned_needs_the_whole_window_at_the_threshold():
    rule = StopRule("learned")
    assert rule.check(points([0.5, 0.99, 0.995]), 30, 200) is None  # two points of three
    assert rule.check(points([0.5, 0.99, 0.995, 1.0]), 40, 200) == "learned"
    assert rule.check(points([0.99, 0.99, 0.989]), 30, 200) is None
    # the budget's last point is the budget, whatever the accuracy
    assert rule.check(points([1.0] * 20), 200, 200) is None
    assert StopRule("budget").check(points([1.0] * 5), 50, 200) is None


def test_plateau_only_past_the_minimum_fraction_and_only_with_its_rule():
    flat = points([0.3] * 12, [2.0] * 12)
    assert StopRule("plateau").check(flat[:6], 60, 200) is None  # 30% of the budget
    assert StopRule("plateau").check(flat, 120, 200) == "plateau"
    assert StopRule("learned").check(flat, 120, 200) is None
    falling = points([0.3] * 12, [2.0 - 0.1 * i for i in range(12)])
    assert StopRule("plateau").check(falling, 120, 200) is None


def test_the_rule_is_part_of_the_configuration():
    budget, learned = TrainConfig(stop="budget").to_dict(), TrainConfig(stop="learned").to_dict()
    assert "stop" not in budget  # budget runs keep the configuration (and hash) they had before the rule
    assert learned["stop"] == {"rule": "learned", "accuracy": 0.99, "window": 3}
    assert config_hash(budget) != config_hash(learned)
    with pytest.raises(ConfigError, match="budget, learned, plateau"):
        TrainConfig(stop="early")


def test_rules_and_reasons_are_enums_stored_by_value():
    # issue 67: the enums' values are the strings stored before them, so configurations, their hashes, results and
    # checkpoints read and write as they did (hashes as of the commit before the enums)
    assert STOP_RULES == ("budget", "learned", "plateau")
    assert STOP_REASONS == ("budget", "learned", "plateau", "diverged")
    assert StopRule("plateau").rule is StopRuleName.PLATEAU and StopRule(StopRuleName.LEARNED) == StopRule("learned")
    stored = TrainConfig(stop="plateau").to_dict()["stop"]
    assert type(stored["rule"]) is str and stored == {"rule": "plateau", "accuracy": 0.99, "window": 3,
                                                      "plateau_drop": 0.01, "min_fraction": 0.5}  # fmt: skip
    hashes = {rule: config_hash(TrainConfig(stop=rule).to_dict()) for rule in STOP_RULES}
    assert hashes == {"budget": "15cbfe80b0d99e71", "learned": "9013327aa24e60af", "plateau": "2eb4718f2b7726db"}
    assert StopRule("learned").check(points([1.0] * 3), 30, 200) is StopReason.LEARNED
    # a checkpoint's info: its reason as a plain string, read back as the member; None only while training
    info = TrainInfo(stop_reason="learned")
    assert info.stop_reason is StopReason.LEARNED and not info.running and not TrainInfo().running
    assert type(info.to_dict()["stop_reason"]) is str and TrainInfo(**info.to_dict()) == info
    assert TrainInfo(stop_reason=None).running


def build(seed: int, task: tasks.Task, name: str = "rope") -> Transformer:
    torch.manual_seed(seed)
    ctx = EncodingContext(d_model=32, n_heads=2, n_layers=2, max_len=task.max_length(), train_length=task.train_length)
    return Transformer(ModelConfig(vocab_size=task.vocab_size, d_model=32, n_layers=2, n_heads=2),
                       encodings.build(name, ctx))  # fmt: skip


@pytest.fixture(scope="module")
def k_back() -> tasks.Task:
    return tasks.build("k_back")


@pytest.mark.slow
def test_a_quick_learner_stops_early_with_its_budget_runs_weights(k_back):
    cfg = TrainConfig(steps=300, batch_size=16, lr=1e-2, curve_every=10, val_batches=0)
    stopped = build(0, k_back)
    info = train(stopped, k_back, TrainConfig(**{**cfg.__dict__, "stop": "learned"}), seed=0, device=CPU,
                 progress=False)  # fmt: skip
    assert info.status == "ok" and info.stop_reason == "learned"
    assert info.steps < cfg.steps and info.steps == info.curve[-1]["step"]
    assert all(p["accuracy"] >= 0.99 for p in info.curve[-3:])
    # the same model trained for exactly those steps of the budget run: the data, schedule and weights are the
    # budget run's up to the stop (same learning-rate schedule, so a budget run cut there)
    full = build(0, k_back)
    ref = train(full, k_back, cfg, seed=0, device=CPU, progress=False)
    assert ref.stop_reason == "budget" and ref.steps == cfg.steps
    assert [p["loss"] for p in ref.curve[: len(info.curve)]] == pytest.approx([p["loss"] for p in info.curve])


def test_a_model_that_cannot_learn_trains_to_the_budget(k_back):
    cfg = TrainConfig(steps=40, batch_size=8, lr=1e-7, curve_every=5, val_batches=0, stop="learned")
    info = train(build(0, k_back), k_back, cfg, seed=0, device=CPU, progress=False)
    assert info.stop_reason == "budget" and info.steps == 40 and info.curve[-1]["accuracy"] < 0.5


@pytest.mark.slow
def test_packed_seeds_stop_where_they_stop_alone(k_back):
    cfg = TrainConfig(steps=120, batch_size=16, lr=1e-2, curve_every=10, val_batches=0, stop="learned")
    seeds = [0, 1]
    alone = []
    for seed in seeds:
        model = build(seed, k_back)
        alone.append((model, train(model, k_back, cfg, seed=seed, device=CPU, progress=False)))
    models = [build(seed, k_back) for seed in seeds]
    inits = [{n: p.detach().clone() for n, p in model.named_parameters()} for model in models]
    infos = train_packed(models, k_back, cfg, seeds, CPU, progress=False)
    for (ref_model, ref), model, info, init in zip(alone, models, infos, inits, strict=True):
        assert (info.steps, info.stop_reason) == (ref.steps, ref.stop_reason) and info.stop_reason == "learned"
        assert info.steps < cfg.steps
        want = dict(ref_model.named_parameters())
        # the weights copied at the stop, not those of another step: the batched matmuls round differently from the
        # lone ones, and at lr 1e-2 that grows with the steps and differs with the CPU's kernels (6e-4 on one weight
        # on an EPYC, over an absolute 5e-4 on CI's CPU), so the distance is measured against how far training moved
        # the weights: 0.08% measured, 100% for weights never copied, 10% for the weights 50 steps on
        off = sum(float((p - want[n]).detach().square().sum()) for n, p in model.named_parameters()) ** 0.5
        moved = sum(float((want[n] - w0).detach().square().sum()) for n, w0 in init.items()) ** 0.5
        assert off < 0.01 * moved, (off, moved)


def test_precision_auto_resolves_per_device_and_is_recorded(monkeypatch):
    assert pdevice.resolve_precision("tf32", CPU) == "tf32"
    assert pdevice.resolve_precision("auto", torch.device("mps")) == "fp32"
    assert pdevice.resolve_precision("auto", CPU) == "fp32"  # measured slower in bf16 at the quick tier's lengths
    for native, want in ((True, "bf16"), (False, "fp32")):  # CUDA: bf16 where the device computes it natively
        monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True, native=native: native)
        assert pdevice.resolve_precision("auto", torch.device("cuda")) == want
    case = Case("rope", "k_back", 64)
    runner = Runner(Settings(precision="auto", device="cpu"))
    assert runner.settings.precision == "fp32"
    assert "precision" not in runner.describe(case)["train"]  # fp32 is the configuration without the key
    assert Settings(precision="auto", device="cpu").train_config(runner.task("k_back")).precision == "fp32"
    bf16 = Runner(Settings(precision="bf16", device="cpu"))
    assert bf16.describe(case)["train"]["precision"] == "bf16" and bf16.model_key(case) != runner.model_key(case)
    fixed = Runner(Settings(precision="fp32", device="cpu")).model_key(case)
    assert Runner(Settings(precision="auto", device="cpu")).model_key(case) == fixed  # auto -> fp32 here
