"""Packed seeds equal seeds trained one by one (issue 17, item 1): for every encoding, the K seeds trained together
as one batched model end with the parameters, learning curves and final losses each seed gets alone, up to float
rounding (their validation points included); a diverging seed is recorded as such without touching the others."""

from __future__ import annotations

import pytest
import torch

from pebench import encodings, tasks
from pebench.encodings import EncodingContext
from pebench.engine.packing import clip_per_seed, packable, train_packed
from pebench.engine.train_config import TrainConfig
from pebench.engine.training import train
from pebench.hashing import derive_seed
from pebench.models import ModelConfig, Transformer

SEEDS = [0, 1, 2]
CFG = TrainConfig(steps=6, batch_size=4, curve_every=3)


def build(name: str, seed: int, task: tasks.Task) -> Transformer:
    """Exactly as the runner builds a seed's model."""
    torch.manual_seed(seed)
    ctx = EncodingContext(d_model=16, n_heads=2, n_layers=2, max_len=task.max_length(), train_length=task.train_length)
    cfg = ModelConfig(vocab_size=task.vocab_size, d_model=16, n_layers=2, n_heads=2)
    return Transformer(cfg, encodings.build(name, ctx))


@pytest.fixture(scope="module")
def task() -> tasks.Task:
    return tasks.build("k_back")


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.skip(reason=encodings.not_applicable(n, tasks.get("k_back"))))
    if encodings.not_applicable(n, tasks.get("k_back")) else n
    for n in encodings.available()
])  # fmt: skip
def test_packed_seeds_equal_one_by_one(name: str, task: tasks.Task) -> None:
    cpu = torch.device("cpu")
    alone = []
    for seed in SEEDS:
        model = build(name, seed, task)
        alone.append((model, train(model, task, CFG, seed=seed, device=cpu, progress=False)))
    models = [build(name, seed, task) for seed in SEEDS]
    if not packable(models[0]):
        pytest.skip(f"{name} is not packable (trained one by one; see docs/scale-out.md)")
    infos = train_packed(models, task, CFG, SEEDS, cpu, progress=False)
    for (ref_model, ref_info), model, info in zip(alone, models, infos, strict=True):
        assert info.status == ref_info.status == "ok"
        assert info.steps == ref_info.steps and info.packed_with == len(SEEDS)
        assert [p["step"] for p in info.curve] == [p["step"] for p in ref_info.curve]
        for got, want in zip(info.curve, ref_info.curve, strict=True):
            assert got["loss"] == pytest.approx(want["loss"], rel=1e-4)
            assert got["accuracy"] == pytest.approx(want["accuracy"], abs=0.02)
            # validation points: each seed's own model, data and positions, as alone
            assert set(got) == set(want) and {"val_accuracy_1x", "val_accuracy_2x"} <= set(got)
            for key in ("val_accuracy_1x", "val_accuracy_2x"):
                assert got[key] == pytest.approx(want[key], abs=0.02), key
        # AdamW divides each gradient by its own running size, so a weight whose gradients are near 0 turns a
        # float-rounding difference of the batched matmuls into a visible one (fope's seed 0 on an AMD EPYC: one
        # element of 0.07 off by 1.3e-4 after 6 steps, every other weight within 1e-6; FIRE's 2-element MLP bias on an
        # Intel Xeon: 1.9e-6 and 6.5e-6). A packing bug moves every weight: the mean difference over the model's
        # weights stays 1e-6-tight, and no weight moves by more than a tenth of one step's size.
        ref_params = dict(ref_model.named_parameters())
        diffs = {pname: (p - ref_params[pname]).abs() for pname, p in model.named_parameters()}
        for pname, diff in diffs.items():
            assert diff.max().item() < 0.1 * CFG.lr, f"{name}: {pname}: {diff.max()}"
        mean = torch.cat([d.flatten() for d in diffs.values()]).mean().item()
        assert mean < 1e-6, f"{name}: mean weight difference {mean:.2e}"
    # the seeds really differ from one another (each its own init and data)
    first, second = (dict(m.named_parameters()) for m in models[:2])
    assert not torch.equal(first["head.weight"], second["head.weight"])


def test_seeds_whose_batches_differ_in_width_are_padded_and_train_as_alone() -> None:
    # copy pads each batch to its longest sample: with 8 samples a batch, two seeds' batches come out of different
    # widths at some steps, which once failed to stack
    task = tasks.build("copy")
    gens = [torch.Generator().manual_seed(derive_seed(s, "train", task.name)) for s in SEEDS]
    steps = [[task.sample_train(8, g).inputs.shape[1] for g in gens] for _ in range(30)]
    assert any(len(set(widths)) > 1 for widths in steps)
    cfg = TrainConfig(steps=30, batch_size=8, lr=1e-2, val_batches=0)
    cpu = torch.device("cpu")
    alone = []
    for seed in SEEDS:
        model = build("alibi", seed, task)
        train(model, task, cfg, seed=seed, device=cpu, progress=False)
        alone.append(model)
    models = [build("alibi", seed, task) for seed in SEEDS]
    infos = train_packed(models, task, cfg, SEEDS, cpu, progress=False)
    assert all(i.status == "ok" and i.steps == 30 for i in infos)
    for ref, model in zip(alone, models, strict=True):
        ref_params = dict(ref.named_parameters())
        for pname, p in model.named_parameters():
            torch.testing.assert_close(p, ref_params[pname], atol=1e-4, rtol=1e-3, msg=pname)


def test_clip_per_seed_matches_torch_clip_for_each_seed() -> None:
    gen = torch.Generator().manual_seed(0)
    grads = [torch.randn(3, 4, 5, generator=gen) * s for s in (1.0, 10.0)] + [torch.randn(3, 7, generator=gen)]
    grads[0][1] *= 1e-3  # seed 1: a small gradient, left unclipped
    expected = []
    for k in range(3):
        ps = [torch.nn.Parameter(torch.zeros_like(g[k])) for g in grads]
        for p, g in zip(ps, grads, strict=True):
            p.grad = g[k].clone()
        norm = torch.nn.utils.clip_grad_norm_(ps, 1.0)
        expected.append((norm, [p.grad for p in ps]))
    norms = clip_per_seed(grads, 1.0)
    for k, (norm, clipped) in enumerate(expected):
        torch.testing.assert_close(norms[k], norm)
        for g, want in zip(grads, clipped, strict=True):
            torch.testing.assert_close(g[k], want)


def test_a_diverging_seed_leaves_the_others_alone(task: tasks.Task) -> None:
    cpu = torch.device("cpu")
    models = [build("rope", seed, task) for seed in SEEDS]
    with torch.no_grad():
        models[1].head.weight.fill_(float("nan"))  # seed 1 is broken from the start
    reference = build("rope", 2, task)
    ref = train(reference, task, CFG, seed=2, device=cpu, progress=False)
    infos = train_packed(models, task, CFG, SEEDS, cpu, progress=False)
    assert [i.status for i in infos] == ["ok", "diverged", "ok"]
    assert infos[1].steps == 0 and "non-finite" in infos[1].message
    assert infos[2].curve[-1]["loss"] == pytest.approx(ref.curve[-1]["loss"], rel=1e-4)
    torch.testing.assert_close(models[2].head.weight, reference.head.weight, atol=1e-4, rtol=1e-3)
