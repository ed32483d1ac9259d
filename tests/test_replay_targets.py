"""SPEC 5 target arithmetic against values computed by hand."""

from __future__ import annotations

import numpy as np
import pytest

from chesszero.replay.targets import (
    blend_root_value,
    blur,
    capped_outcome_wdl,
    length_labels,
    next_policy_index,
    outcome_wdl,
    policy_surprise,
    wdl_from_value,
)


def test_wdl_of_values() -> None:
    # v = 0.4: r = 0.6 -> W = 0.4 + 0.2, D = 0.2, L = 0.2
    np.testing.assert_allclose(wdl_from_value(0.4), [0.6, 0.2, 0.2], atol=1e-7)
    np.testing.assert_allclose(wdl_from_value(-0.4), [0.2, 0.2, 0.6], atol=1e-7)
    np.testing.assert_allclose(wdl_from_value(np.array([1.0, -1.0, 0.0])),
                               [[1, 0, 0], [0, 0, 1], [1 / 3, 1 / 3, 1 / 3]], atol=1e-7)
    with pytest.raises(ValueError, match="in \\[-1, 1\\]"):
        wdl_from_value(1.5)


def test_outcome_one_hot_from_each_side() -> None:
    np.testing.assert_array_equal(outcome_wdl("0-1", np.array([True, False])),
                                  [[0, 0, 1], [1, 0, 0]])
    np.testing.assert_array_equal(outcome_wdl("1-0", np.array([True, False])),
                                  [[1, 0, 0], [0, 0, 1]])
    np.testing.assert_array_equal(outcome_wdl("1/2-1/2", np.array([True])), [[0, 1, 0]])
    with pytest.raises(ValueError):
        outcome_wdl("2-0", np.array([True]))


def test_blur_by_plies_remaining() -> None:
    onehot = np.array([[1.0, 0, 0], [1.0, 0, 0], [0, 0, 1.0]])
    z = blur(onehot, np.array([0, 100, 1]))
    d100 = 0.998 ** 100  # 0.8185668...
    np.testing.assert_allclose(z[0], [1, 0, 0], atol=1e-7)
    np.testing.assert_allclose(z[1], [0.8790445, 0.0604777, 0.0604777], atol=1e-6)
    np.testing.assert_allclose(z[1, 0], d100 + (1 - d100) / 3, atol=1e-6)
    np.testing.assert_allclose(z[2], [0.002 / 3, 0.002 / 3, 0.998 + 0.002 / 3], atol=1e-7)
    np.testing.assert_allclose(z.sum(axis=1), 1.0, atol=1e-6)


def test_root_value_blend() -> None:
    # 0.9 * [1, 0, 0] + 0.1 * wdl(0.4) = 0.9 * [1,0,0] + 0.1 * [0.6, 0.2, 0.2]
    z = blend_root_value(np.array([[1.0, 0, 0]]), np.array([0.4]), beta=0.1)
    np.testing.assert_allclose(z, [[0.96, 0.02, 0.02]], atol=1e-7)
    np.testing.assert_allclose(blend_root_value(np.array([[0, 1.0, 0]]), np.array([0.9]), 0.0),
                               [[0, 1, 0]])
    with pytest.raises(ValueError, match="beta"):
        blend_root_value(np.zeros((1, 3)), np.zeros(1), 1.2)


def test_capped_game_value_flips_with_the_side_to_move() -> None:
    # v_cap = 0.5 at the cut position: wdl(0.5) = [2/3, 1/6, 1/6] there,
    # the mirror [1/6, 1/6, 2/3] one ply earlier, then the per-ply blur
    raw = capped_outcome_wdl(0.5, np.array([0, 1, 2]))
    np.testing.assert_allclose(raw, [[2 / 3, 1 / 6, 1 / 6], [1 / 6, 1 / 6, 2 / 3],
                                     [2 / 3, 1 / 6, 1 / 6]], atol=1e-7)
    z = blur(raw, np.array([0, 1, 2]))
    np.testing.assert_allclose(z[1], [0.998 / 6 + 0.002 / 3, 0.998 / 6 + 0.002 / 3,
                                      0.998 * 2 / 3 + 0.002 / 3], atol=1e-7)


def test_length_labels_and_masks() -> None:
    values, mask = length_labels(np.array([10, 0, 400]), capped=False)
    np.testing.assert_allclose(values, [0.025, 0.0, 1.0])
    np.testing.assert_array_equal(mask, [1, 1, 1])
    values, mask = length_labels(np.array([10, 0]), capped=True)
    np.testing.assert_array_equal(mask, [0, 0])
    np.testing.assert_array_equal(values, [0, 0])


def test_next_policy_is_the_very_next_searched_ply() -> None:
    np.testing.assert_array_equal(next_policy_index(np.array([3, 4, 5, 7, 8])), [1, 2, -1, 4, -1])
    np.testing.assert_array_equal(next_policy_index(np.array([0])), [-1])
    with pytest.raises(ValueError, match="ascending"):
        next_policy_index(np.array([2, 2]))


def test_policy_surprise_is_kl() -> None:
    # KL([.5,.5] || [.25,.25]) = ln 2; KL([1,0] || [.5,.5]) = ln 2; KL(p || p) = 0
    pi = np.array([[0.5, 0.5], [1.0, 0.0], [0.3, 0.7]])
    prior = np.array([[0.25, 0.25], [0.5, 0.5], [0.3, 0.7]])
    np.testing.assert_allclose(policy_surprise(pi, prior), [np.log(2), np.log(2), 0.0], atol=1e-6)
    # pi = [0.8, 0.2], prior = [0.4, 0.6]: 0.8 ln 2 + 0.2 ln(1/3)
    np.testing.assert_allclose(policy_surprise(np.array([0.8, 0.2]), np.array([0.4, 0.6])),
                               0.8 * np.log(2) + 0.2 * np.log(1 / 3), atol=1e-6)
