"""The event loop of a centralized batched queue (`serving.batched_departures`, InferLine's estimator),
compiled with numba: the planner runs it over hours of trace for every configuration it compares.

One engine: `departures_kernel` is this loop compiled, and `departures_kernel.py_func` is the same
function as plain Python (what the tests compare it with). Without numba the plain function runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import numpy as np

try:
    from numba import njit
    from numba.extending import register_jitable
except ImportError:  # numba is a declared dependency; without it the same loop runs, only slower
    njit = register_jitable = None  # type: ignore[assignment]

F = TypeVar("F", bound=Callable[..., object])


def _jitable(function: F) -> F:
    """`function` itself from Python, compiled into the kernel that calls it."""
    return register_jitable(function) if register_jitable is not None else function


# The server free times are a binary heap in a float64 array (heapq's invariant, sifts as in heapq):
# numba's heapq over a list is two to three times slower here, and replicas may be many.
@_jitable
def _push(heap: np.ndarray, size: int, value: float) -> int:
    """Adds `value` to the heap of `size` entries; returns the new size."""
    k = size
    while k > 0:
        parent = (k - 1) >> 1
        if heap[parent] <= value:
            break
        heap[k] = heap[parent]
        k = parent
    heap[k] = value
    return size + 1


@_jitable
def _pop(heap: np.ndarray, size: int) -> tuple[float, int]:
    """The smallest entry of the heap of `size` entries (at least one), and the new size."""
    top = heap[0]
    size -= 1
    value = heap[size]
    k = 0
    while True:
        child = 2 * k + 1
        if child >= size:
            break
        if child + 1 < size and heap[child + 1] < heap[child]:
            child += 1
        if value <= heap[child]:
            break
        heap[k] = heap[child]
        k = child
    if size > 0:
        heap[k] = value
    return top, size


def _departures(
    times: np.ndarray,
    service_s: np.ndarray,
    change_at: np.ndarray,
    change_to: np.ndarray,
    replicas: int,
    batch: int,
) -> np.ndarray:
    """Departures of sorted arrivals `times` (float64) from `replicas` servers (at least one) taking up
    to `batch` rows; `service_s[rows - 1]` a batch's time, `batch` long; replica changes
    `(change_at[c], change_to[c])` sorted by time."""
    n = times.size
    done = np.empty(n)
    # Servers alive at once never exceed the largest replica count asked for (retirements first cancel).
    most = replicas
    for k in change_to:
        most = max(most, k)
    free = np.zeros(most)  # when each server is next free (a heap of `live` entries)
    live = replicas
    target, retire, c = replicas, 0, 0
    i = 0
    while i < n:
        at, live = _pop(free, live)
        now = at if at > times[i] else times[i]
        grew = False
        while c < change_at.size and change_at[c] <= now:
            when, k = change_at[c], change_to[c]
            c += 1
            if k > target:
                grow = k - target - min(retire, k - target)  # cancel pending retirements first
                retire -= k - target - grow
                for _ in range(grow):
                    live = _push(free, live, when)
                grew = grew or grow > 0
            else:
                retire += target - k
            target = k
        if grew:  # a new server may be free before this one: take the earliest again
            live = _push(free, live, at)
            continue
        if retire > 0 and live > 0:  # this server goes (one always stays)
            retire -= 1
            continue
        start = now
        # Everything queued when the server starts, up to the batch size (at least the head query):
        # a scan, as a batch is short and the queue behind it may be millions of rows long.
        j = i + 1
        last = min(i + batch, n)
        while j < last and times[j] <= start:
            j += 1
        end = start + service_s[j - i - 1]
        done[i:j] = end
        live = _push(free, live, end)
        i = j
    return done


def _waits(times: np.ndarray, work: np.ndarray, servers: int) -> np.ndarray:
    """How long each of the sorted arrivals `times` waits for one of `servers` FIFO servers (at least
    one), each query then holding a server for its own `work` seconds (no batching)."""
    n = times.size
    waited = np.empty(n)
    free = np.zeros(servers)
    live = servers
    for i in range(n):
        at, live = _pop(free, live)
        start = at if at > times[i] else times[i]
        waited[i] = start - times[i]
        live = _push(free, live, start + work[i])
    return waited


def _compile(function: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """`function` compiled, its machine code cached in __pycache__ (or numba's user-wide cache) so that a
    new process loads it instead of compiling; where no cache directory is writable numba refuses
    `cache=True` at import, and the kernel is compiled in each process instead."""
    if njit is None:
        return function
    try:
        return njit(cache=True)(function)
    except RuntimeError:
        return njit(function)  # type: ignore[no-any-return]


departures_kernel = _compile(_departures)
waits_kernel = _compile(_waits)
