"""The one scale on which the diagnostics' moves compare (pebench.analysis.mechanisms; docs/diagnostics.md), worked
by hand."""

from __future__ import annotations

import torch
from pytest import approx

from pebench.analysis.mechanisms import mean_position_r2, moved, probe_skill


def test_the_mean_predictor_r2_is_the_closed_form_and_its_limit():
    """Positions 0..kL-1 predicted as (L-1)/2: R² = -3(kL-L)²/(k²L²-1), which tends to -3(k-1)²/k²."""
    for k in (2, 4):
        t, length = k * 4096, 4096
        y = torch.arange(t, dtype=torch.float64)
        exact = 1 - float((y - (length - 1) / 2).square().sum() / (y - y.mean()).square().sum())
        assert exact == approx(-3 * (t - length) ** 2 / (t**2 - 1), rel=1e-9)
        assert mean_position_r2(k) == approx(exact, rel=1e-3)
    assert (mean_position_r2(1), mean_position_r2(2), mean_position_r2(4)) == (0.0, -0.75, -1.6875)


def test_the_probe_moves_by_its_skill_over_the_mean_predictor():
    assert probe_skill(-1.6875, 4) == 0.0 and probe_skill(1.0, 4) == 1.0 and probe_skill(-3.0, 4) == 0.0
    assert probe_skill(-0.6875, 4) == approx(1 / 2.6875)  # one R² unit above the mean predictor, of 2.6875
    assert probe_skill(0.5, 1) == 0.5 and probe_skill(-2.0, 1) == 0.0
    # decodable at 1x (0.8), no better than the mean at 4x: it moved 0.8, not the R² drop of 2.49
    assert moved("position_probe", 0.8, -1.6875, 4) == approx(0.8)
    # not decodable at 1x and no better at 4x: it did not move, though its R² fell by 1.69
    assert moved("position_probe", 0.0, -1.6875, 4) == 0.0


def test_shares_move_by_their_change_and_the_logit_range_by_log2_over_2():
    assert moved("local_mass", 1.0, 0.6, 4) == approx(0.4)
    assert moved("attn_entropy", 0.5, 0.7, 4) == approx(0.2)
    assert moved("logit_range_ratio", 1.0, 4.0, 4) == 1.0 and moved("logit_range_ratio", 1.0, 0.5, 4) == 0.5
    assert moved("logit_range_ratio", 1.0, 0.0, 4) == 0.0  # no ratio: no move
