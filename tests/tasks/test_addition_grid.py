"""addition's operand-length grid (option ``grid``; McLeish et al. 2024, arXiv:2405.17399, the (len a, len b)
heatmaps): which cells a length scores, each cell's sequences, the cells' scores for an oracle model whose right and
wrong cells are known by hand, what the runner stores, the evaluation cost, and that with the grid off nothing
changes (configuration, config hash, stored metrics)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from pebench import tasks
from pebench.engine.evaluation import evaluate, evaluate_grid
from pebench.engine.runner import Case, Runner
from pebench.engine.settings import Settings
from pebench.tasks import IGNORE
from pebench.tasks.grid import cell_split, evaluations_at, parse_cell_split

PLUS, SEP, END, PAD = 10, 11, 12, 13
CPU = torch.device("cpu")


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def operands(x: list[int]) -> tuple[str, str]:
    """The two operands as usually written, read off a ``reversed`` sequence ``a PLUS b SEP ...``."""
    p, k = x.index(PLUS), x.index(SEP)
    return "".join(map(str, x[:p]))[::-1], "".join(map(str, x[p + 1 : k]))[::-1]


def test_grid_off_changes_neither_the_configuration_nor_its_hash() -> None:
    task = tasks.build("addition")
    assert task.config() == {"name": "addition", "version": "2", "options": {"train_max": 3, "digits": "reversed"}}
    assert task.grid_cells(3) == {} and evaluations_at(task, 3) == 1

    def runner(**opts: object) -> Runner:
        return Runner(Settings(device="cpu", task_options={"addition": dict(opts)} if opts else {}))

    case = Case("rope", "addition", 3)
    plain, off, on = runner(), runner(grid=False), runner(grid=True)
    assert plain.new_record(case).config_hash == off.new_record(case).config_hash
    assert on.new_record(case).config_hash != plain.new_record(case).config_hash  # grid results are other results
    assert on.describe(case)["task"]["options"]["grid"] is True
    assert on.model_key(case) == plain.model_key(case)  # ... of the same trained model (evaluation only)


def test_each_length_scores_the_pairs_whose_longer_operand_has_that_length() -> None:
    task = tasks.build("addition", {"grid": True})
    assert task.grid_cells(1) == {(1, 1): "test"}
    assert task.grid_cells(3) == {(1, 3): "cell1x3", (2, 3): "cell2x3", (3, 3): "test", (3, 1): "cell3x1",
                                  (3, 2): "cell3x2"}  # fmt: skip
    assert evaluations_at(task, 3) == 5  # the test split and four more cells
    every = [cell for n in task.eval_lengths("full") for cell in task.grid_cells(n)]
    assert sorted(every) == [(i, j) for i in range(1, 16) for j in range(1, 16)]  # the full tier: 15 x 15, once each
    quick = {cell for n in task.eval_lengths("quick") for cell in task.grid_cells(n)}
    assert len(quick) == sum(2 * n - 1 for n in (3, 4, 6, 12, 15))


def test_a_cells_sequences_have_its_operand_lengths() -> None:
    task = tasks.build("addition", {"grid": True})
    for (i, j), n in (((2, 5), 5), ((5, 1), 5), ((1, 1), 4)):
        batch = task.sample(64, n, gen(i * 10 + j), cell_split(i, j))
        assert batch.inputs.shape == (64, task.tokens(n)) and set(batch.annotations) == set(task.annotations)
        for x, y in zip(batch.inputs.tolist(), batch.targets.tolist(), strict=True):
            a, b = operands(x)
            assert (len(a), len(b)) == (i, j) and a[0] != "0" and b[0] != "0"
            answer = [v for v in y if v != IGNORE]
            assert answer == [int(d) for d in str(int(a) + int(b))[::-1]] + [END]
    assert parse_cell_split("cell12x3") == (12, 3) and parse_cell_split("test") is None
    with pytest.raises(ValueError, match=r"^task addition: split 'cell2x6' does not fit length 5; valid cells: "):
        task.sample(2, 5, gen(), "cell2x6")
    with pytest.raises(ValueError, match="unknown split 'depth0.5'"):
        task.sample(2, 5, gen(), "depth0.5")


class Oracle(torch.nn.Module):
    """Sums correctly when ``len a >= len b`` and predicts PAD (never a target) otherwise, so its exact match is 1 in
    the cells on and below the diagonal and 0 above it."""

    def __init__(self) -> None:
        super().__init__()
        self.encoding = SimpleNamespace(configure_eval=lambda *a: None, positions=lambda *a, **k: None)

    def forward(self, inputs: torch.Tensor, positions: object = None, annotations: object = None) -> torch.Tensor:
        logits = torch.zeros(*inputs.shape, 14)
        logits[..., PAD] = 1.0
        for row, x in enumerate(inputs.tolist()):
            a, b = operands(x)
            if len(a) >= len(b):
                answer = [int(d) for d in str(int(a) + int(b))[::-1]] + [END]
                k = x.index(SEP)
                for t, token in enumerate(answer):
                    logits[row, k + t, token] = 2.0
        return logits


def test_the_grid_of_an_oracle_by_hand() -> None:
    task, model = tasks.build("addition", {"grid": True}), Oracle()
    splits = {"test": evaluate(model, task, 3, "test", 8, 0, CPU, 4)}
    grid = evaluate_grid(model, task, 3, splits, 8, 0, CPU, 4)
    assert grid["axes"] == ["digits of a", "digits of b"]
    exact = {cell: result["sequence_accuracy"] for cell, result in grid["cells"].items()}
    # rows: digits of a, columns: digits of b; right exactly where len a >= len b
    assert exact == {"1,3": 0.0, "2,3": 0.0, "3,3": 1.0, "3,1": 1.0, "3,2": 1.0}
    assert {c: r["token_accuracy"] for c, r in grid["cells"].items()} == exact
    assert grid["cells"]["3,3"] is splits["test"]  # the diagonal cell is the case's own test split
    assert all(r["n_samples"] == 8 for r in grid["cells"].values())
    assert evaluate_grid(model, tasks.build("addition"), 3, splits, 8, 0, CPU, 4) is None  # grid off
    assert evaluate_grid(model, tasks.build("k_back"), 64, splits, 8, 0, CPU, 4) is None  # a task without cells


@pytest.mark.parametrize("encoding", ["learned", "abacus", "coupling"])
def test_the_runner_stores_the_cells_only_with_the_grid_on(encoding: str) -> None:
    tiny = {"steps": 2, "d_model": 16, "n_layers": 1, "n_heads": 2, "batch_size": 4, "eval_samples": 4, "device": "cpu"}
    opts = {"train_max": 1}
    on = Runner(Settings(**tiny, task_options={"addition": {**opts, "grid": True}})).run(Case(encoding, "addition", 2))
    assert on.status == "ok", on.message
    grid, test = on.metrics["grid"], on.metrics["splits"]["test"]
    assert grid["axes"] == ["digits of a", "digits of b"] and sorted(grid["cells"]) == ["1,2", "2,1", "2,2"]
    assert grid["cells"]["2,2"] == test and on.score == test["sequence_accuracy"]
    assert all(r["n_samples"] == 4 for r in grid["cells"].values())
    off = Runner(Settings(**tiny, task_options={"addition": opts})).run(Case(encoding, "addition", 2))
    assert "grid" not in off.metrics and off.metrics["splits"]["test"] == test  # the same model, the same test split


def test_a_shards_cost_counts_the_grid_cells() -> None:
    from pebench.suite.sharding import case_costs

    cases = [Case("rope", "addition", 3)]
    off = case_costs(Runner(Settings(device="cpu")), cases)[("rope", "addition")]
    on = case_costs(Runner(Settings(device="cpu", task_options={"addition": {"grid": True}})), cases)
    assert on[("rope", "addition")] - off == 256 * 12 * 4  # eval samples x tokens(3) x the four cells besides test
