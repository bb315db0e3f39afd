"""Exp3/Exp4 updates and the weighted vote against numbers worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from infaas.policy.bandits import (
    BanditConfig,
    SelectionState,
    combine,
    exp3_observe,
    exp3_probabilities,
    exp3_select,
    exp4_observe,
    zero_one_loss,
)


def test_exp3_probabilities_mix_weights_with_uniform_exploration() -> None:
    # (1 − 0.1)·(3/4) + 0.1/2 = 0.725; (1 − 0.1)·(1/4) + 0.05 = 0.275
    probabilities = exp3_probabilities(SelectionState((3.0, 1.0)), BanditConfig(eta=0.1, gamma=0.1))
    assert probabilities == pytest.approx((0.725, 0.275))


def test_exp3_update_divides_the_loss_by_the_probability() -> None:
    config = BanditConfig(eta=0.1, gamma=0.1)
    state = SelectionState.uniform(2)
    # s_0 ← 1·exp(−0.1·1/0.5) = exp(−0.2) = 0.8187307531; s_1 stays 1 (the maximum: no renormalizing)
    after = exp3_observe(state, config, chosen=0, loss=1.0, probability=0.5)
    assert after.weights == pytest.approx((0.8187307531, 1.0))
    assert after.observed == 1
    # p_0 = 0.9·0.8187307531/1.8187307531 + 0.05 = 0.4551494024
    assert exp3_probabilities(after, config) == pytest.approx((0.4551494024, 0.5448505976))
    # the draw picks by the cumulative probabilities
    assert exp3_select(after, config, 0.45) == (0, pytest.approx(0.4551494024))
    assert exp3_select(after, config, 0.46) == (1, pytest.approx(0.5448505976))


def test_exp3_keeps_weights_relative_to_the_best() -> None:
    config = BanditConfig(eta=1.0, gamma=0.0)
    state = SelectionState((1.0, 0.5))
    # s_0 ← exp(−1·1/0.25) = exp(−4) = 0.0183156389; then divided by the maximum, 0.5
    after = exp3_observe(state, config, chosen=0, loss=1.0, probability=0.25)
    assert after.weights == pytest.approx((2 * math.exp(-4), 1.0))


def test_exp4_updates_every_model_seen_and_leaves_the_missing_alone() -> None:
    config = BanditConfig(eta=0.5)
    after = exp4_observe(SelectionState.uniform(3), config, [0.0, 1.0, None])
    assert after.weights == pytest.approx((1.0, math.exp(-0.5), 1.0))  # exp(−0.5) = 0.6065306597
    with pytest.raises(ValueError, match="one loss"):
        exp4_observe(after, config, [0.0, 1.0])
    with pytest.raises(ValueError, match="within"):
        exp4_observe(after, config, [0.0, 2.0, None])


def test_combine_is_a_weighted_vote_and_confidence_the_agreement() -> None:
    state = SelectionState((1.0, 0.5, 0.4))
    zero, one, two = [0.9, 0.1, 0.0], [0.2, 0.7, 0.1], [0.1, 0.1, 0.8]
    outputs = [np.array([zero, two]), np.array([one, two]), np.array([one, two])]
    combined = combine(state, outputs)
    # row 0: class 0 gets 1.0, class 1 gets 0.5 + 0.4 = 0.9 → class 0, one model of three agrees
    # row 1: every model says class 2
    assert combined.labels.tolist() == [0, 2]
    assert combined.confidence == pytest.approx([1 / 3, 1.0])
    assert combined.scores[0] == pytest.approx([1.0 / 1.9, 0.9 / 1.9, 0.0])
    # the third model late: class 0 gets 1.0 against 0.5, and one of the two that answered agrees
    late = combine(state, [outputs[0], outputs[1], None])
    assert late.labels.tolist() == [0, 2]
    assert late.confidence == pytest.approx([0.5, 1.0])
    with pytest.raises(ValueError, match="no model answered"):
        combine(state, [None, None, None])


def test_ties_go_to_the_lower_class() -> None:
    combined = combine(SelectionState.uniform(2), [np.array([[0.0, 1.0]]), np.array([[1.0, 0.0]])])
    assert combined.labels.tolist() == [0]
    assert combined.confidence.tolist() == [0.5]


def test_zero_one_loss_is_the_fraction_of_wrong_rows() -> None:
    assert zero_one_loss([0, 1, 2, 2], [0, 1, 1, 0]) == 0.5
    with pytest.raises(ValueError, match="one true label per row"):
        zero_one_loss([0, 1], [0])


def test_config_refuses_nonsense() -> None:
    with pytest.raises(ValueError):
        BanditConfig(eta=0.0)
    with pytest.raises(ValueError):
        BanditConfig(gamma=1.5)
