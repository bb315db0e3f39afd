"""The ParM encoder and decoder: the paper's worked example (k=3) and properties over random groups."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from infaas.policy.parity import CodingGroup, GroupFormer, decode, encode

F32 = np.float32


def test_papers_worked_example_k3() -> None:
    """ParM §3: F(X2), F(X3) and F_P(P) give F̂(X1) = (0.26, 0.61, 0.18)."""
    f2 = np.array([0.30, 0.08, 0.62], dtype=F32)
    f3 = np.array([0.72, 0.23, 0.05], dtype=F32)
    parity = np.array([1.28, 0.92, 0.85], dtype=F32)
    np.testing.assert_allclose(decode(parity, [f2, f3]), [0.26, 0.61, 0.18], atol=1e-6)


def test_worked_example_through_a_group_in_any_arrival_order() -> None:
    f2 = np.array([0.30, 0.08, 0.62], dtype=F32)
    f3 = np.array([0.72, 0.23, 0.05], dtype=F32)
    parity = np.array([1.28, 0.92, 0.85], dtype=F32)
    group = CodingGroup(k=3)
    assert group.arrive(2, f3) == []
    assert group.arrive_parity(parity) == []  # two members still missing: nothing decodable
    [(member, output)] = group.arrive(1, f2)
    assert member == 0
    np.testing.assert_allclose(output, [0.26, 0.61, 0.18], atol=1e-6)
    assert group.settled
    assert group.arrive(0, np.zeros(3, dtype=F32)) == []  # the late original adds nothing


def test_no_reconstruction_once_every_member_answered() -> None:
    group = CodingGroup(k=2)
    group.arrive(0, np.ones(2, dtype=F32))
    group.arrive(1, np.ones(2, dtype=F32))
    assert group.arrive_parity(np.full(2, 2, dtype=F32)) == []
    assert group.settled and not group.reconstructed


@pytest.mark.parametrize("k", [1, 5])
def test_k_out_of_range_is_refused(k: int) -> None:
    with pytest.raises(ValueError, match="k must be 2..4"):
        CodingGroup(k=k)


def test_members_of_different_shapes_are_refused() -> None:
    with pytest.raises(ValueError, match="share one shape"):
        encode([np.zeros((1, 4), dtype=F32), np.zeros((2, 4), dtype=F32)])
    with pytest.raises(ValueError, match="at least 2"):
        encode([np.zeros((1, 4), dtype=F32)])


finite = st.floats(-100, 100, allow_nan=False, width=32)


@st.composite
def groups(draw: st.DrawFn) -> tuple[int, list[np.ndarray], list[np.ndarray]]:
    """k inputs and k outputs of one shape each (a batch of rows, as queries are)."""
    k = draw(st.integers(2, 4))
    rows = draw(st.integers(1, 3))
    width_in, width_out = draw(st.integers(1, 6)), draw(st.integers(1, 5))
    xs = [draw(arrays(F32, (rows, width_in), elements=finite)) for _ in range(k)]
    ys = [draw(arrays(F32, (rows, width_out), elements=finite)) for _ in range(k)]
    return k, xs, ys


@settings(max_examples=200, deadline=None)
@given(groups(), st.data())
def test_a_linear_parity_model_reconstructs_every_member(
    group: tuple[int, list[np.ndarray], list[np.ndarray]], data: st.DataObject
) -> None:
    """For a linear F the exact parity model is F itself: F(Σ X_i) = Σ F(X_i); decoding any one missing
    member gives back its own output, whichever member is missing and in whatever order the rest arrive."""
    k, xs, _ = group
    w = data.draw(arrays(F32, (xs[0].shape[1], 3), elements=st.floats(-4, 4, width=32)))

    def f(x: np.ndarray) -> np.ndarray:
        return (x.astype(np.float64) @ w.astype(np.float64)).astype(F32)

    missing = data.draw(st.integers(0, k - 1))
    order = data.draw(st.permutations([i for i in range(k) if i != missing]))
    coding = CodingGroup(k=k)
    parity_first = data.draw(st.booleans())
    got: list[tuple[int, np.ndarray]] = []
    if parity_first:
        got += coding.arrive_parity(f(encode(xs)))
    for i in order:
        got += coding.arrive(i, f(xs[i]))
    if not parity_first:
        got += coding.arrive_parity(f(encode(xs)))
    assert [m for m, _ in got] == [missing]
    np.testing.assert_allclose(got[0][1], f(xs[missing]), rtol=1e-3, atol=0.05 * k)


@settings(max_examples=200, deadline=None)
@given(groups(), st.data())
def test_decode_inverts_the_sum_of_outputs(
    group: tuple[int, list[np.ndarray], list[np.ndarray]], data: st.DataObject
) -> None:
    """With a perfect parity output Σ F(X_i), decoding member j gives F(X_j) (up to float32 rounding)."""
    k, _, ys = group
    j = data.draw(st.integers(0, k - 1))
    perfect = np.sum(np.stack(ys), axis=0, dtype=F32)
    others = [y for i, y in enumerate(ys) if i != j]
    np.testing.assert_allclose(decode(perfect, others), ys[j], atol=1e-3 * k * 100)


@settings(max_examples=100, deadline=None)
@given(groups())
def test_encode_is_the_sum_and_keeps_the_shape(group: tuple[int, list[np.ndarray], list[np.ndarray]]) -> None:
    _, xs, _ = group
    parity = encode(xs)
    assert parity.shape == xs[0].shape and parity.dtype == F32
    np.testing.assert_allclose(parity, np.sum(np.stack(xs), axis=0, dtype=np.float64), atol=1e-3)
    assert all(x is not parity for x in xs)  # a fresh array: the members' inputs are not overwritten


def test_groups_fill_with_consecutive_queries_of_one_shape_within_the_bound() -> None:
    former = GroupFormer(k=2, bound_s=0.005)
    x = np.zeros((1, 3), dtype=F32)
    assert former.add(1, x, now=0.0) is None
    assert [q for q, _ in former.add(2, x, now=0.004) or []] == [1, 2]
    assert former.add(3, x, now=0.010) is None
    # Query 4 comes after the bound: 3 is left uncoded and 4 opens the next group.
    assert former.add(4, x, now=0.016) is None and former.uncoded == 1
    # A query of another shape cannot be summed with 4: 4 is left uncoded too.
    assert former.add(5, np.zeros((2, 3), dtype=F32), now=0.017) is None and former.uncoded == 2
    assert [q for q, _ in former.add(6, np.ones((2, 3), dtype=F32), now=0.018) or []] == [5, 6]
