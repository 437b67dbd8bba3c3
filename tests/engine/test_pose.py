"""PoSE position ids (issue 88), checked against the paper (Zhu et al. 2023, arXiv:2309.10400, Section 3.2 and
Appendix B), not against the sampler's own output: ``N`` chunks of consecutive ids, chunk ``i`` shifted by a skipping
bias ``u_i``, ``u_0 = 0`` (so the first id is 0), ``u_i ~ U({u_{i-1}, ..., L_t - L_c})``; for two chunks the first
chunk's length ``l_0 ~ U({1, ..., L_c - 1})`` (Appendix B, Figure 6); over many examples every relative distance
``1, ..., L_t - 1`` of the target window is covered."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats

from pebench.engine.pose import pose_positions


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _biases(pos: torch.Tensor) -> torch.Tensor:
    """``pos[k] - k``: by Eq. 4 the skipping bias ``u_i`` of the chunk that holds position ``k``."""
    return pos - torch.arange(pos.shape[1])


@pytest.mark.parametrize("chunks", [1, 2, 3, 5, 16])
def test_rows_are_chunks_of_consecutive_ids_shifted_by_nondecreasing_biases(chunks: int):
    length, target = 16, 80
    pos = pose_positions(512, length, target, _gen(1), chunks=chunks)
    assert pos.dtype == torch.int64 and pos.shape == (512, length)
    assert (pos[:, 0] == 0).all()  # u_0 = 0, st_0 = 0
    steps = pos.diff(dim=1)
    assert (steps >= 1).all()  # strictly increasing
    # a jump (a step above 1) only where a chunk ends: at most N - 1 of them
    assert ((steps > 1).sum(dim=1) <= chunks - 1).all()
    u = _biases(pos)
    assert (u.diff(dim=1) >= 0).all()  # u_i >= u_{i-1}
    assert u.min() >= 0 and u.max() <= target - length  # u_i in {0, ..., L_t - L_c}
    assert pos.max() < target and pos.min() >= 0  # a subset of 0..L_t - 1
    if chunks == 1:
        assert torch.equal(pos, torch.arange(length).expand(512, length))


@pytest.mark.parametrize("chunks", [2, 3])
def test_the_jumps_use_all_their_chances(chunks: int):
    """With ``L_t - L_c`` large, ``u_i = u_{i-1}`` is rare: most rows show all ``N - 1`` chunk boundaries."""
    pos = pose_positions(2000, 16, 16 * 64, _gen(2), chunks=chunks)
    jumps = (pos.diff(dim=1) > 1).sum(dim=1)
    assert (jumps == chunks - 1).float().mean() > 0.9


def test_the_second_chunks_bias_is_uniform_over_its_range():
    """Two chunks: ``u_1 ~ U({0, ..., L_t - L_c})``, read off the last id (``u_1 + L_c - 1``)."""
    length, target = 16, 64
    room = target - length
    pos = pose_positions(20000, length, target, _gen(3))
    u1 = (pos[:, -1] - (length - 1)).numpy()
    counts = np.bincount(u1, minlength=room + 1)
    assert counts.shape == (room + 1,)
    assert stats.chisquare(counts).pvalue > 1e-4
    assert abs(u1.mean() - room / 2) < 0.5  # sd of the mean ~ 0.1
    for q in (0.25, 0.5, 0.75):
        assert abs(np.quantile(u1, q) - q * room) <= 2


def test_the_first_chunks_length_is_uniform_over_the_window():
    """Two chunks: ``l_0 ~ U({1, ..., L_c - 1})`` (Appendix B, Figure 6), read off where the ids jump (rows with
    ``u_1 > 0``; ``l_0`` and ``u_1`` are drawn independently)."""
    length, target = 12, 12 * 16
    pos = pose_positions(20000, length, target, _gen(4))
    steps = pos.diff(dim=1)
    jumped = (steps > 1).any(dim=1)
    l0 = (steps[jumped] > 1).int().argmax(dim=1).numpy() + 1
    counts = np.bincount(l0, minlength=length)[1:]
    assert counts.shape == (length - 1,) and counts.min() > 0
    assert stats.chisquare(counts).pvalue > 1e-4


@pytest.mark.parametrize("chunks", [2, 3, 4])
def test_the_last_bias_has_the_mean_of_nested_uniform_draws(chunks: int):
    """``E[u_i | u_{i-1}] = (u_{i-1} + R) / 2`` with ``R = L_t - L_c``, so ``E[u_{N-1}] = R (1 - 2^-(N-1))``."""
    length, target = 16, 16 + 400
    room = target - length
    pos = pose_positions(20000, length, target, _gen(5), chunks=chunks)
    last = (pos[:, -1] - (length - 1)).double()
    assert abs(last.mean().item() - room * (1 - 2.0 ** -(chunks - 1))) < 4  # sd of the mean <= ~0.9


def test_every_relative_distance_of_the_target_window_is_covered():
    """The paper's point: over training examples the relative distances cover ``{1, ..., L_t - 1}``, although each
    example holds only ``L_c`` ids."""
    length, target = 8, 8 * 6
    pos = pose_positions(4000, length, target, _gen(6))
    distances = (pos[:, None, :] - pos[:, :, None]).flatten()
    covered = set(distances[distances > 0].unique().tolist())
    assert covered == set(range(1, target))


def test_without_skipping_only_the_training_window_is_covered():
    """``N = 1`` (Table 5's first row) is plain fine-tuning: distances stop at ``L_c - 1``."""
    length = 8
    pos = pose_positions(100, length, length * 6, _gen(6), chunks=1)
    distances = (pos[:, None, :] - pos[:, :, None]).flatten()
    assert distances.max().item() == length - 1


def test_rows_are_independent_draws():
    pos = pose_positions(64, 16, 160, _gen(7))
    assert len({tuple(r) for r in pos.tolist()}) > 50


def test_a_seed_fixes_the_draw():
    a = pose_positions(32, 16, 64, _gen(8), chunks=3)
    b = pose_positions(32, 16, 64, _gen(8), chunks=3)
    assert torch.equal(a, b)
    assert not torch.equal(a, pose_positions(32, 16, 64, _gen(9), chunks=3))
    g = _gen(8)
    first = pose_positions(32, 16, 64, g, chunks=3)
    assert torch.equal(first, a)
    assert not torch.equal(pose_positions(32, 16, 64, g, chunks=3), a)  # the generator moves on


@pytest.mark.parametrize("chunks", [1, 2, 3, 10])
def test_no_extension_is_the_plain_range(chunks: int):
    pos = pose_positions(5, 10, 10, _gen(10), chunks=chunks)
    assert torch.equal(pos, torch.arange(10).expand(5, 10))


def test_one_chunk_per_id_still_fits_the_window():
    pos = pose_positions(200, 6, 30, _gen(11), chunks=6)
    assert (pos[:, 0] == 0).all() and (pos.diff(dim=1) >= 1).all() and pos.max() < 30


def test_a_huge_target_window():
    target = 10**15
    pos = pose_positions(64, 32, target, _gen(12))
    assert pos.max() < target and (pos.diff(dim=1) >= 1).all()
    assert pos[:, -1].max() > target // 2  # the bias spans the whole range, not a truncated one


def test_empty_batch():
    assert pose_positions(0, 8, 16, _gen()).shape == (0, 8)


@pytest.mark.parametrize(
    ("args", "chunks", "match"),
    [
        ((4, 16, 15), 2, "target_length"),
        ((4, 16, 32), 0, "chunks"),
        ((4, 16, 32), 17, "chunks"),
        ((4, 0, 32), 1, "length"),
        ((-1, 16, 32), 2, "batch_size"),
    ],
)
def test_bad_input_is_a_one_line_value_error(args: tuple[int, int, int], chunks: int, match: str):
    with pytest.raises(ValueError, match=match) as info:
        pose_positions(*args, _gen(), chunks=chunks)
    assert "\n" not in str(info.value)
