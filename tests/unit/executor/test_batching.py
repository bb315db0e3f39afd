"""The executor's pure batching helpers: grouping queued queries and running oversized batches."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from services.executor.batching import batches as _batches
from services.executor.batching import run_chunked as _run_chunked
from services.executor.queries import Delivery
from tests.orders import order


def query(n: int, rows: int, *, width: int = 4, name: str = "x") -> Delivery:
    return Delivery(
        entry_id=f"{n}-0".encode(),
        order=order(f"q{n}"),
        inputs={name: np.full((rows, width), n, dtype=np.float32)},
        rows=rows,
    )


def ids(batches: list[list[Delivery]]) -> list[list[str]]:
    return [[q.order.id for q in batch] for batch in batches]


@pytest.mark.parametrize(
    ("rows", "max_batch", "expected"),
    [
        ([1, 2, 1, 3, 2], 4, [["q0", "q1", "q2"], ["q3"], ["q4"]]),  # 1+2+1 = 4 fits; 3+2 = 5 does not
        ([1, 1, 1, 1], 4, [["q0", "q1", "q2", "q3"]]),
        ([1, 1, 1, 1, 1], 4, [["q0", "q1", "q2", "q3"], ["q4"]]),
        ([2, 10, 1], 4, [["q0"], ["q1"], ["q2"]]),  # a query larger than max_batch goes alone
        ([10, 1, 1], 4, [["q0"], ["q1", "q2"]]),
        ([3, 3, 3], 1, [["q0"], ["q1"], ["q2"]]),
        ([4], 4, [["q0"]]),
    ],
)
def test_batches_group_in_arrival_order_up_to_max_batch(
    rows: list[int], max_batch: int, expected: list[list[str]]
) -> None:
    queries = [query(i, r) for i, r in enumerate(rows)]
    assert ids(_batches(queries, max_batch)) == expected


def test_batches_of_nothing() -> None:
    assert _batches([], 8) == []


def test_batches_never_exceed_max_batch_unless_a_single_query_does() -> None:
    rng = np.random.default_rng(7)
    rows = [int(r) for r in rng.integers(1, 12, size=200)]
    queries = [query(i, r) for i, r in enumerate(rows)]
    batches = _batches(queries, 8)
    for batch in batches:
        assert len(batch) == 1 or sum(q.rows for q in batch) <= 8
    # Arrival order is kept and no query is lost or duplicated.
    assert [q.order.id for batch in batches for q in batch] == [q.order.id for q in queries]
    # Greedy: a batch is only closed when the next query does not fit.
    for batch, following in zip(batches, batches[1:], strict=False):
        assert sum(q.rows for q in batch) + following[0].rows > 8


def test_queries_with_different_inner_shapes_are_never_merged() -> None:
    queries = [
        query(0, 1, width=4),
        query(1, 1, width=8),
        query(2, 1, width=8),
        query(3, 1, width=4),
        query(4, 1, width=4),
    ]
    assert ids(_batches(queries, 16)) == [["q0"], ["q1", "q2"], ["q3", "q4"]]


def test_queries_with_different_input_names_are_never_merged() -> None:
    queries = [query(0, 1, name="x"), query(1, 1, name="y"), query(2, 1, name="y")]
    assert ids(_batches(queries, 16)) == [["q0"], ["q1", "q2"]]


def test_batches_concatenate_cleanly() -> None:
    queries = [query(0, 2, width=3), query(1, 1, width=3), query(2, 2, width=5), query(3, 3, width=5)]
    for batch in _batches(queries, 8):
        merged = np.concatenate([q.inputs["x"] for q in batch])  # would raise on mixed widths
        assert merged.shape[0] == sum(q.rows for q in batch)


# --- _run_chunked -------------------------------------------------------------------------------------


class Doubler:
    """Stands in for a runtime: records the batch sizes it is asked to run."""

    def __init__(self) -> None:
        self.sizes: list[int] = []

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        self.sizes.append(inputs["x"].shape[0])
        out = {"y": inputs["x"] * 2}
        if "w" in inputs:
            out["w1"] = inputs["w"] + 1
        return out


def run_chunked(runtime: Doubler, inputs: dict[str, np.ndarray], max_batch: int) -> dict[str, np.ndarray]:
    rt: Any = runtime
    return _run_chunked(rt, inputs, max_batch)


def test_run_chunked_within_max_batch_runs_once() -> None:
    rt = Doubler()
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    out = run_chunked(rt, {"x": x}, 4)
    assert rt.sizes == [4]
    np.testing.assert_array_equal(out["y"], x * 2)


@pytest.mark.parametrize(
    ("rows", "max_batch", "sizes"),
    [(10, 4, [4, 4, 2]), (8, 4, [4, 4]), (5, 1, [1, 1, 1, 1, 1]), (17, 16, [16, 1])],
)
def test_run_chunked_splits_into_max_batch_pieces_in_order(
    rows: int, max_batch: int, sizes: list[int]
) -> None:
    rt = Doubler()
    x = np.arange(rows * 3, dtype=np.float32).reshape(rows, 3)
    out = run_chunked(rt, {"x": x}, max_batch)
    assert rt.sizes == sizes
    assert out["y"].shape == (rows, 3)
    np.testing.assert_array_equal(out["y"], x * 2)


def test_run_chunked_slices_every_input_alike() -> None:
    rt = Doubler()
    x = np.arange(10, dtype=np.int64).reshape(10, 1)
    w = np.arange(100, 110, dtype=np.int64).reshape(10, 1)
    out = run_chunked(rt, {"x": x, "w": w}, 3)
    assert rt.sizes == [3, 3, 3, 1]
    np.testing.assert_array_equal(out["y"], x * 2)
    np.testing.assert_array_equal(out["w1"], w + 1)
