"""Velox heads: the Sherman–Morrison update against the closed form and a case worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from infaas.policy.personalization import HeadConfig, features, mean_weights, new_head, predict, update


def test_one_row_by_hand() -> None:
    config = HeadConfig(ridge=1.0)
    head = update(new_head(2, config), [[1.0, 0.0]], [1], config)
    # f = (1, 0, 1); A = I + f fᵀ, so A⁻¹ = I − f fᵀ/(1 + fᵀf) = I − f fᵀ/3
    expected = np.array([[2 / 3, 0, -1 / 3], [0, 1, 0], [-1 / 3, 0, 2 / 3]])
    assert head.a_inv == pytest.approx(expected)
    # B = [I; 0] + f·e_1ᵀ: column 1 gains f
    assert head.b == pytest.approx(np.array([[1, 1], [0, 1], [0, 1]]))
    assert head.updates == 1
    # the identity head predicted class 0 (the model's own label), the truth was 1
    assert head.error == 1.0 and head.model_error == 1.0


def test_sherman_morrison_matches_the_closed_form() -> None:
    rng = np.random.default_rng(0)
    config = HeadConfig(ridge=0.5)
    scores = rng.random((40, 3))
    truth = rng.integers(0, 3, 40)
    head = new_head(3, config)
    for start in range(0, 40, 7):
        head = update(head, scores[start : start + 7], truth[start : start + 7], config)
    f = features(scores)
    w0 = np.vstack([np.eye(3), np.zeros((1, 3))])
    a = 0.5 * np.eye(4) + f.T @ f
    b = 0.5 * w0 + f.T @ np.eye(3)[truth]
    assert head.weights == pytest.approx(np.linalg.solve(a, b), abs=1e-9)
    assert head.updates == 40


def test_a_head_learns_a_users_label_shift() -> None:
    config = HeadConfig(ridge=1.0)
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 3, 300)
    scores = np.eye(3)[labels] + 0.1 * rng.random((300, 3))
    shifted = (labels + 1) % 3  # this user calls every class by the next one's name
    head = new_head(3, config)
    assert np.mean(predict(head, scores) == shifted) == 0.0  # the model's own labels: all wrong for them
    head = update(head, scores[:200], shifted[:200], config)
    assert np.mean(predict(head, scores[200:]) == shifted[200:]) == 1.0


def test_new_users_start_from_the_mean_head() -> None:
    config = HeadConfig()
    a = new_head(2, config, prior=np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]))
    b = new_head(2, config, prior=np.array([[0.0, 1.0], [1.0, 0.0], [0.0, 0.0]]))
    prior = mean_weights([a.weights, b.weights])
    assert prior is not None
    assert new_head(2, config, prior=prior).weights == pytest.approx(
        np.array([[0.5, 0.5], [0.5, 0.5], [0, 0]])
    )
    assert mean_weights([]) is None


def test_staleness_from_the_running_error() -> None:
    config = HeadConfig(decay=0.5, stale_margin=0.1)
    head = new_head(2, config)
    scores = np.array([[1.0, 0.0]] * 4)
    head = update(head, scores, [0, 0, 0, 0], config)  # the head and the model both right
    assert not head.stale(config)
    # a head trained toward class 0 on these rows, now told class 1 while the model... also says 0:
    # both wrong, so not stale (the head is no worse than the model)
    head = update(head, scores, [1, 1, 1, 1], config)
    assert head.error == pytest.approx(0.5) and head.model_error == pytest.approx(0.5)
    assert not head.stale(config)


def test_bad_feedback_is_refused() -> None:
    config = HeadConfig()
    head = new_head(2, config)
    with pytest.raises(ValueError, match="one true label per row"):
        update(head, [[1.0, 0.0]], [0, 1], config)
    with pytest.raises(ValueError, match="within"):
        update(head, [[1.0, 0.0]], [2], config)
    with pytest.raises(ValueError, match="takes 2 scores"):
        update(head, [[1.0, 0.0, 0.0]], [0], config)


def test_a_head_that_learned_a_shift_goes_stale_when_the_user_stops_shifting() -> None:
    config = HeadConfig(decay=0.5, stale_margin=0.1)
    scores = np.array([[1.0, 0.0], [0.0, 1.0]] * 20)
    own = np.array([0, 1] * 20)
    head = update(new_head(2, config), scores, 1 - own, config)  # learns: this user swaps the classes
    assert np.all(predict(head, scores) == 1 - own)
    # ... then stops: the head is wrong on every row, the model right. Running errors (decay 0.5): the
    # head 0.5·1 + 0.5·1 = 1, the model 0.5·1 + 0.5·0 = 0.5 (both were wrong on the first feedback)
    head = update(head, scores, own, config)
    assert head.error == pytest.approx(1.0) and head.model_error == pytest.approx(0.5)
    assert head.stale(config)
