"""The batched queue's compiled kernel against the same function run as plain Python (pure: no clock)."""

from __future__ import annotations

import heapq

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from services.planner.simulator.batch_queue import departures_kernel, waits_kernel

# Times on a 1 ms grid, so that arrivals, server free times and replica changes often tie.
instants = st.integers(0, 60).map(lambda ms: ms / 1000)


@st.composite
def queues(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, int]:
    batch = draw(st.integers(1, 6))
    arrivals = np.sort(np.array(draw(st.lists(instants, max_size=80)), dtype=np.float64))
    service_s = (
        np.array(draw(st.lists(st.integers(1, 20), min_size=batch, max_size=batch)), dtype=np.float64) / 1000
    )
    changes = sorted(draw(st.lists(st.tuples(instants, st.integers(0, 6)), max_size=8)))
    change_at = np.array([t for t, _ in changes], dtype=np.float64)
    change_to = np.array([k for _, k in changes], dtype=np.int64)
    return arrivals, service_s, change_at, change_to, draw(st.integers(1, 5)), batch


@settings(max_examples=300, deadline=None)  # the first example compiles the kernel
@given(queues())
def test_the_compiled_kernel_departs_every_query_when_plain_python_does(
    queue: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, int],
) -> None:
    compiled = departures_kernel(*queue)
    plain = departures_kernel.py_func(*queue)  # type: ignore[attr-defined]
    np.testing.assert_array_equal(compiled, plain)


def reference_waits(arrivals: list[float], work: list[float], servers: int) -> list[float]:
    """FIFO over `servers`, written the obvious way: each query takes the earliest free server."""
    free = [0.0] * servers
    waits = []
    for at, w in zip(arrivals, work, strict=True):
        start = max(heapq.heappop(free), at)
        waits.append(start - at)
        heapq.heappush(free, start + w)
    return waits


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(instants, st.integers(0, 20)), max_size=80),
    st.integers(1, 4),
)
def test_the_serving_path_queue_waits_as_fifo_servers_do(
    queries: list[tuple[float, int]], servers: int
) -> None:
    queries.sort()
    arrivals = np.array([t for t, _ in queries], dtype=np.float64)
    work = np.array([w for _, w in queries], dtype=np.float64) / 1000
    expected = reference_waits(arrivals.tolist(), work.tolist(), servers)
    np.testing.assert_allclose(waits_kernel(arrivals, work, servers), expected, atol=1e-12)
    np.testing.assert_array_equal(
        waits_kernel(arrivals, work, servers),
        waits_kernel.py_func(arrivals, work, servers),  # type: ignore[attr-defined]
    )
