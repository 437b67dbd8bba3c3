"""PoSE position ids: positional skip-wise training (Zhu et al. 2023, "PoSE: Efficient Context Window Extension of
LLMs via Positional Skip-wise Training", arXiv:2309.10400, ICLR 2024).

PoSE trains inside the original window ``L_c`` (here: the task's training length ``length``) with position ids that
skip, so that the relative distances seen in training cover the whole target window ``L_t`` (here: ``target_length``,
``F * length`` for an extension factor ``F``): the paper's first desideratum is that the relative distances of the
manipulated ids "comprehensively cover the range of {1, ..., L_t - 1}" (Section 3.2).

The sampling, from Section 3.2 of the paper (version 2, the ICLR text; ``paper/PoSE-v2.pdf`` of the authors'
repository dwzhu-pku/PoSE), for each training example afresh:

* the window is divided at random into ``N`` chunks ``c_0, ..., c_{N-1}`` of lengths ``l_0, ..., l_{N-1} >= 1``,
  ``sum_i l_i = L_c``; chunk ``c_i`` starts at ``st_i = sum_{j<i} l_j`` and holds the ids
  ``Pos(c_i) = {st_i, ..., st_i + l_i - 1}`` (Eq. 3);
* a skipping bias ``u_i ~ U({u_{i-1}, ..., L_t - L_c})`` (discrete uniform) is drawn for each chunk in turn, with
  ``u_0 = 0`` ("For simplicity, we set the initial bias terms u_0 and v_0 to 0"), so the first chunk starts at 0;
* chunk ``c_i``'s ids become ``PoSE(c_i) = {u_i + st_i, ..., u_i + st_i + l_i - 1}`` (Eq. 4). Since
  ``u_i >= u_{i-1}`` the ids never overlap: they rise by 1 inside a chunk and by ``1 + u_i - u_{i-1}`` across a
  boundary, and the last id is ``u_{N-1} + L_c - 1 <= L_t - 1``. Position ``k`` of the sequence gets ``k + u_i``
  for the chunk ``c_i`` that holds ``k``.

The paper's text says only that the window is divided "randomly"; the distribution of the chunk lengths is the one
of its Appendix B (Figure 6, the Monte Carlo code behind the coverage curves of Figure 5): for ``N = 2``,
``l_0 ~ U({1, ..., L_c - 1})``, ``l_1 = L_c - l_0``; for ``N = 3``, ``l_0 ~ U({1, ..., L_c - 2})``,
``l_1 ~ U({1, ..., L_c - l_0 - 1})``, ``l_2`` the rest. Here, for any ``N``, each length but the last is uniform over
what leaves every later chunk at least one position, ``l_i ~ U({1, ..., L_c - st_i - (N - 1 - i)})``, and the last
takes the rest; the biases are then drawn as above (Appendix B draws ``u_1 ~ U({0, ..., L_t - L_c})`` and
``u_2 ~ U({u_1, ..., L_t - L_c})``, as Section 3.2 says). Rows of a batch are independent draws, all from the one
CPU generator passed in (lengths first, then biases, each as one draw over the batch), so a seed fixes the batch.

Not followed, on purpose:

* the content offsets ``v_i ~ U({v_{i-1}, ..., L_x - L_c})`` of Eq. 5, which pick the text of each chunk from a
  longer document ``x`` (``c_i = x[v_i + st_i : v_i + st_i + l_i]``): our sequences are the task's own and only
  their position ids change, as in the paper's variant ``v_i = 0`` (contiguous content, Appendix A, Table 4: "these
  variations have relatively little impact");
* the position interpolation (linear, NTK, YaRN) that the paper applies on top of the skipped ids: that is the
  encoding's business, not the sampler's.

The authors' reference implementation (``src/train_pose.py``, ``train_preprocess_function_pose``: it builds each
example's position ids for two chunks and cuts the matching text) agrees on ``u_0 = 0`` (its first revision drew
``u_0`` at random too; the revision of the paper's version 2 fixes it at 0, a comment there says to make the coverage
of large relative distances more uniform) and on ``u_1 ~ U({0, ..., L_t - L_c})``, but draws the first chunk's
length only up to half the window, ``l_0 ~ U({1, ..., floor((L_c + 1) / 2)})``, so that the second chunk is never
the shorter. We follow the paper's Appendix B (the whole range), which is stated for any ``N``. For ``N = 2`` the
difference hardly matters to what the paper is after: a row covers the relative distances
``{1, ..., max(l_0, l_1) - 1}`` inside its chunks and ``{u_1 + 1, ..., u_1 + L_c - 1}`` across them, which depend
on ``l_0`` only through ``max(l_0, L_c - l_0)``, about uniform over ``L_c / 2, ..., L_c - 1`` under either rule.

The default number of chunks is the paper's: ``N = 2`` ("in this paper we set N to 2", Section 3.2). Appendix B
(Table 5) weighs it: ``N = 1`` is plain fine-tuning and does not extend at all, ``N = 3`` is slightly better than 2,
``N = L_c`` (every chunk one id, close to RandPos) is much worse, "a trade-off between training efficiency and
performance"; ``N = 2`` stays closest to the pre-training structure. With ``target_length == length`` every bias is
0 and the ids are ``0, ..., length - 1``.
"""

from __future__ import annotations

import torch

__all__ = ["pose_positions"]

# one 62-bit draw per value, reduced modulo the range: exact integers, bias below range / 2**62
_DRAW_HIGH = 2**62


def _uniform(low: torch.Tensor, high: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """One draw of ``U({low, ..., high})`` per element (int64, ``low <= high`` element-wise)."""
    raw = torch.randint(0, _DRAW_HIGH, low.shape, generator=generator, dtype=torch.int64)
    return low + raw % (high - low + 1)


def pose_positions(batch_size: int, length: int, target_length: int, generator: torch.Generator,
                   chunks: int = 2) -> torch.Tensor:  # fmt: skip
    """PoSE position ids for ``batch_size`` sequences of ``length`` tokens covering a window of ``target_length``.

    Each row is an independent draw (see the module): ``chunks`` chunks with lengths drawn in turn,
    ``l_i ~ U({1, ..., length - st_i - (chunks - 1 - i)})`` and the last one the rest, skipping biases ``u_0 = 0``,
    ``u_i ~ U({u_{i-1}, ..., target_length - length})``, and the id of position ``k`` in chunk ``i`` is ``k + u_i``.
    Returns int64 ``(batch_size, length)`` on the CPU: each row starts at 0, strictly increases (by 1 inside a chunk)
    and stays below ``target_length``; ``0, ..., length - 1`` for every row when ``target_length == length``.
    """
    if batch_size < 0:
        raise ValueError(f"pose_positions: batch_size must be >= 0, got {batch_size}")
    if length < 1:
        raise ValueError(f"pose_positions: length must be >= 1, got {length}")
    if target_length < length:
        raise ValueError(f"pose_positions: target_length ({target_length}) must be >= length ({length})")
    if not 1 <= chunks <= length:
        raise ValueError(f"pose_positions: chunks must be in 1..length ({length}), got {chunks}")

    shape = (batch_size,)
    lengths = []
    start = torch.zeros(shape, dtype=torch.int64)  # st_i
    for i in range(chunks - 1):
        longest = length - start - (chunks - 1 - i)  # leaves every later chunk >= 1 position
        l_i = _uniform(torch.ones(shape, dtype=torch.int64), longest, generator)
        lengths.append(l_i)
        start = start + l_i
    # the last chunk takes the rest: length - start >= 1

    room = torch.full(shape, target_length - length, dtype=torch.int64)  # L_t - L_c
    bias = torch.zeros(shape, dtype=torch.int64)  # u_0 = 0
    steps = torch.zeros((batch_size, length), dtype=torch.int64)  # u_i - u_{i-1} at st_i
    start = torch.zeros(shape, dtype=torch.int64)
    for l_i in lengths:
        start = start + l_i  # st_{i+1}, < length
        nxt = _uniform(bias, room, generator)
        steps.scatter_add_(1, start[:, None], (nxt - bias)[:, None])
        bias = nxt
    return torch.arange(length, dtype=torch.int64) + steps.cumsum(1)
