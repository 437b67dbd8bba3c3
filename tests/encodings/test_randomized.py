"""Randomized positional encodings (Ruoss et al. 2023, arXiv:2305.16843), tested from the paper's definition: a
sequence of T tokens gets an ordered uniform random subset of [0, L) as its positions, in training and -- by default,
as in the reference implementation -- at evaluation, where the draw comes from the evaluation's seeded generator.
Option ``eval_positions=plain`` evaluates on 0..T-1 instead; ``max_position`` is L."""

from __future__ import annotations

import math

import pytest
import torch

from pebench import encodings, tasks
from pebench.encodings import EncodingContext
from pebench.engine.evaluation import evaluate
from pebench.engine.runner import Case, Runner, attention_snapshot
from pebench.engine.settings import Settings
from pebench.errors import LengthError, OptionError
from pebench.models.transformer import ModelConfig, Transformer

D, HEADS, LAYERS = 32, 4, 2
CPU = torch.device("cpu")


def ctx(max_len: int = 128) -> EncodingContext:
    return EncodingContext(d_model=D, n_heads=HEADS, n_layers=LAYERS, max_len=max_len, train_length=64)


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def assert_ordered_subset(pos: torch.Tensor, batch: int, length: int, limit: int) -> None:
    assert pos.shape == (batch, length) and pos.dtype == torch.long
    assert (pos[:, 1:] > pos[:, :-1]).all()  # strictly increasing: sorted and distinct
    assert pos.min() >= 0 and pos.max() < limit


# -- the positions -------------------------------------------------------------------------------------------------


def test_randomized_training_positions():
    enc = encodings.build("randomized_rope", ctx(max_len=100), {"max_position": 100})
    pos = enc.positions(8, 30, gen(), train=True)
    assert_ordered_subset(pos, 8, 30, 100)
    assert len({tuple(r) for r in pos.tolist()}) == 8  # drawn per sample
    assert pos.max() > 30  # positions beyond the training length are used
    assert torch.equal(pos, enc.positions(8, 30, gen(), train=True))
    with pytest.raises(LengthError, match="valid: <= 100"):
        enc.positions(1, 101, gen(), train=True)


def test_evaluation_positions_are_ordered_random_subsets_of_0_to_L():
    enc = encodings.build("randomized_rope", ctx(), {"max_position": 300})
    g = gen()
    first, second = enc.positions(16, 40, g, train=False), enc.positions(16, 40, g, train=False)
    for pos in (first, second):
        assert_ordered_subset(pos, 16, 40, 300)
        assert len({tuple(r) for r in pos.tolist()}) == 16  # every sample draws its own
    assert not torch.equal(first, second)  # and every batch
    assert first.max() >= 40  # not 0..T-1
    with pytest.raises(LengthError, match="evaluation length 301 exceeds max_position 300; valid: <= 300"):
        enc.positions(1, 301, g, train=False)


def test_evaluation_positions_are_uniform_subsets():
    # a uniform random T-subset of {0..L-1}, sorted: its k-th smallest (k = 1..T) has mean k(L+1)/(T+1) - 1, and
    # every position is in the subset with probability T/L
    big_l, t, n = 200, 9, 4000
    pos = encodings.build("randomized_rope", ctx(), {"max_position": big_l}).positions(n, t, gen(3), train=False)
    expected = torch.tensor([k * (big_l + 1) / (t + 1) - 1 for k in range(1, t + 1)])
    # std of an order statistic here is at most ~L/(2 sqrt(T+2)) ≈ 30; over 4000 samples the mean's is < 0.5
    torch.testing.assert_close(pos.double().mean(0), expected.double(), atol=2.5, rtol=0)
    counts = torch.bincount(pos.flatten(), minlength=big_l).double() / n
    assert counts.shape == (big_l,) and abs(counts.mean().item() - t / big_l) < 1e-12
    assert (counts - t / big_l).abs().max() < 0.025  # each ≈ 0.045 ± 0.0033 (binomial std)


def test_evaluation_positions_come_from_the_given_generator():
    enc = encodings.build("randomized_learned", ctx())
    assert torch.equal(enc.positions(4, 20, gen(7), train=False), enc.positions(4, 20, gen(7), train=False))
    assert not torch.equal(enc.positions(4, 20, gen(7), train=False), enc.positions(4, 20, gen(8), train=False))


def test_plain_evaluates_on_0_to_T_minus_1():
    enc = encodings.build("randomized_rope", ctx(), {"eval_positions": "plain"})
    assert enc.positions(4, 20, gen(), train=False) is None  # the model's default, 0..T-1
    assert enc.positions(4, 20, gen(), train=True).max() >= 20  # training is unchanged


# -- options -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "max_len", "message"),
    [
        ({"eval_positions": "sometimes"}, 128,
         "encoding randomized_rope: option eval_positions='sometimes' is invalid; valid: one of 'random', 'plain'"),
        ({"max_position": 100}, 128,
         "encoding randomized_rope: option max_position=100 is below the longest evaluation sequence (128 tokens); "
         "valid: max_position >= 128"),
        ({"max_position": 0}, 128,
         "encoding randomized_rope: option max_position=0 is out of range; valid: int in [1, inf)"),
    ],
)  # fmt: skip
def test_bad_options_are_one_line_errors(options, max_len, message):
    with pytest.raises(OptionError) as err:
        encodings.build("randomized_rope", ctx(max_len), options)
    assert str(err.value) == message


def test_a_too_short_L_is_refused_before_training():
    runner = Runner(Settings(encoding_options={"randomized_rope": {"max_position": 512}}, device="cpu"))
    with pytest.raises(OptionError, match="below the longest evaluation sequence .1024 tokens.; valid: max_pos"):
        runner.describe(Case("randomized_rope", "k_back", 64))  # k_back's longest (full tier) is 1024 tokens


def test_learned_gets_a_table_of_L_rows():
    enc = encodings.build("randomized_learned", ctx(), {"max_position": 300})
    assert enc.inner.table.num_embeddings == 300
    assert enc.embed(torch.tensor([0, 150, 299])).shape == (3, D)
    assert encodings.build("randomized_learned", ctx()).inner.table.num_embeddings == 2048  # the paper's L


def test_version_and_config_name_the_protocol():
    rope = encodings.get("rope")
    assert encodings.get("randomized_rope").version not in ("", rope.version)
    random = encodings.build("randomized_rope", ctx()).extra_config()
    plain = encodings.build("randomized_rope", ctx(), {"eval_positions": "plain"}).extra_config()
    assert "[0, 2048)" in random["eval_positions_protocol"] and plain["eval_positions_protocol"] == "0..T-1"


def test_the_evaluation_protocol_shares_the_trained_model():
    plain = Runner(Settings(encoding_options={"randomized_rope": {"eval_positions": "plain"}}, device="cpu"))
    random = Runner(Settings(device="cpu"))
    other_l = Runner(Settings(encoding_options={"randomized_rope": {"max_position": 4096}}, device="cpu"))
    case = Case("randomized_rope", "k_back", 64)
    assert plain.describe(case) != random.describe(case)  # different results ...
    assert plain.model_key(case) == random.model_key(case)  # ... of one trained model
    assert other_l.model_key(case) != random.model_key(case)  # L changes training


# -- evaluation ----------------------------------------------------------------------------------------------------


def model_for(name: str, task, options: dict | None = None) -> Transformer:
    torch.manual_seed(0)
    cfg = ModelConfig(vocab_size=task.vocab_size, d_model=D, n_layers=LAYERS, n_heads=HEADS)
    return Transformer(cfg, encodings.build(name, ctx(task.max_length()), options)).eval()


def spy(model: Transformer) -> list[tuple[torch.Tensor, torch.Tensor | None]]:
    """Record the (tokens, positions) of every forward call."""
    calls: list[tuple[torch.Tensor, torch.Tensor | None]] = []
    model.register_forward_pre_hook(lambda _m, args: calls.append((args[0].clone(), args[1])))
    return calls


def test_evaluation_draws_positions_from_the_seeded_evaluation_generator():
    task = tasks.build("k_back")
    model = model_for("randomized_rope", task)
    calls = spy(model)
    runs = [evaluate(model, task, 128, "test", 24, seed, CPU, batch_size=8) for seed in (0, 0, 1)]
    first, again, other = calls[0:3], calls[3:6], calls[6:9]
    assert len(calls) == 9
    for _, pos in first:
        assert_ordered_subset(pos, 8, 128, 2048)
    assert len({tuple(r) for _, pos in first for r in pos.tolist()}) == 24  # per sample, per batch
    assert all(torch.equal(a[1], b[1]) for a, b in zip(first, again, strict=True))  # same seed: same positions
    assert runs[0] == runs[1]  # ... and identical metrics
    assert not any(torch.equal(a[1], b[1]) for a, b in zip(first, other, strict=True))  # another seed: others


def test_plain_evaluation_is_the_wrapped_encodings_and_random_only_moves_positions():
    task = tasks.build("k_back")
    rope = model_for("rope", task)
    plain = model_for("randomized_rope", task, {"eval_positions": "plain"})
    random = model_for("randomized_rope", task)
    with torch.no_grad():  # same weights in the three models, off the zero-init of any residual branch; a random
        for m in (plain, random, rope):  # shift, since a constant one makes q.k nearly blind to positions
            g = torch.Generator().manual_seed(1)
            for p in m.parameters():
                p.add_(0.05 * torch.randn(p.shape, generator=g))
    spies = [spy(m) for m in (rope, plain, random)]
    results = [evaluate(m, task, 128, "test", 16, 0, CPU, batch_size=8) for m in (rope, plain, random)]
    assert results[0] == results[1]  # plain: 0..T-1, exactly the wrapped encoding's evaluation
    assert all(pos is None for _, pos in spies[1])
    assert results[2]["loss"] != results[0]["loss"] and math.isfinite(results[2]["loss"])
    # the positions never change the evaluation data
    assert all(torch.equal(a[0], b[0]) for a, b in zip(spies[0], spies[2], strict=True))


def test_attention_snapshot_uses_the_evaluation_positions():
    task = tasks.build("k_back")
    rope = model_for("rope", task)
    plain = model_for("randomized_rope", task, {"eval_positions": "plain"})
    random = model_for("randomized_rope", task)
    snap = [attention_snapshot(m, task, 0, CPU, n_tokens=8) for m in (rope, plain, random, random)]
    assert snap[0] == snap[1] and snap[2] == snap[3]  # plain is rope's; random is deterministic
    assert snap[2]["tokens"] == snap[0]["tokens"] and snap[2]["heads"] != snap[0]["heads"]
