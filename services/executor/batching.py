"""Pure logic of an instance's batching: the adaptive batch limit (Clipper's AIMD), how long a short
batch waits for batch mates (delayed batching, chosen per instance), grouping queued queries into
batches, and running a batch larger than the variant's max batch in max-batch chunks."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from infaas.runtimes.base import Runtime
from infaas.schemas.variants import VariantProfile
from services.executor.queries import Delivery


@dataclass
class AIMD:
    """Clipper's adaptive batch size: grow by `step` while batches finish within their SLO (the
    smallest of their orders'), cut by 10 % when one does not; always within 1…the variant's max batch."""

    cap: int
    step: int = 1
    backoff: float = 0.9
    size: float = 1.0

    def limit(self) -> int:
        return max(1, min(self.cap, int(self.size)))

    def observe(self, rows: int, compute_ms: float, slo_ms: float) -> None:
        if compute_ms > slo_ms:
            self.size = max(1.0, self.size * self.backoff)
        elif rows >= self.limit():
            # Grow only on evidence: a batch that did not fill the limit says nothing about a bigger one.
            self.size = min(float(self.cap), self.size + self.step)


def batches(queries: list[Delivery], max_batch: int) -> list[list[Delivery]]:
    """Group orders in arrival order into batches of at most `max_batch` rows (a larger one alone)."""
    out: list[list[Delivery]] = []
    current: list[Delivery] = []
    rows = 0
    signature: tuple[tuple[str, tuple[int, ...]], ...] | None = None
    for q in queries:
        shape_key = tuple((n, a.shape[1:]) for n, a in q.inputs.items())
        if current and (rows + q.rows > max_batch or shape_key != signature):
            out.append(current)
            current, rows = [], 0
        current.append(q)
        rows += q.rows
        signature = shape_key
    if current:
        out.append(current)
    return out


def run_chunked(runtime: Runtime, inputs: dict[str, np.ndarray], max_batch: int) -> dict[str, np.ndarray]:
    rows = next(iter(inputs.values())).shape[0]
    if rows <= max_batch:
        return runtime.run(inputs)
    parts = [
        runtime.run({n: a[i : i + max_batch] for n, a in inputs.items()}) for i in range(0, rows, max_batch)
    ]
    return {n: np.concatenate([p[n] for p in parts]) for n in parts[0]}


@dataclass(frozen=True, slots=True)
class Delay:
    """How long a short batch waits for batch mates, up to how many rows, and why."""

    ms: float
    target_rows: int
    reason: str


NO_DELAY_LOAD = 0.2
"""Below this share of one-query-at-a-time capacity an instance never waits: the batch mates would be
too rare to pay for the wait (most waits would end with the query still alone)."""

MIN_GAIN = 2.0
"""Batching must at least halve the per-row cost at the batch it would form for a wait to pay."""


def batch_delay(
    profile: VariantProfile, *, offered_rps: float, limit: int, slo_ms: float, cap_ms: float
) -> Delay:
    """Delayed batching chosen by the instance itself (Clipper's batch timeout, which Clipper leaves to
    the operator): wait for company only where the variant's per-batch fixed cost makes batching pay,
    the offered rows are frequent enough to arrive during the wait, and the wait fits the SLO.

    From the profile, a batch of `b` rows costs about `fixed + b × per_row` (the line through the
    profiled batch-1 and batch-`limit` latencies). The rows worth waiting for are those that bring the
    fixed cost's share down to a row's own cost (`fixed / per_row`, at most `limit`); the wait is the time
    `offered_rps` takes to bring them, at most a quarter of the SLO (what is left must cover the batch
    and the hops), at most `cap_ms`, and never so long that the batch itself would miss the SLO.
    Pure: the consumer (services/executor/consumers.py) applies it, the heartbeat reports it."""
    if limit <= 1 or cap_ms <= 0:
        return Delay(0.0, 1, "batches of one query (no batch mates to wait for)")
    lat1 = profile.profiled_ms(1, tail=False)
    latb = profile.profiled_ms(limit, tail=False)
    if not (0 < lat1 < float("inf")) or not latb < float("inf"):
        return Delay(0.0, 1, "no profiled latency to weigh a wait against")
    per_row = max(0.0, (latb - lat1) / (limit - 1))
    fixed = max(0.0, lat1 - per_row)
    gain = limit * lat1 / latb if latb > 0 else 1.0
    if gain < MIN_GAIN:
        return Delay(0.0, 1, f"batching gains only {gain:.1f}× per row at {limit} rows")
    load = offered_rps * lat1 / 1000
    if load < NO_DELAY_LOAD:
        return Delay(0.0, 1, f"offered {offered_rps:.0f} rows/s, {load:.0%} of one-at-a-time capacity")
    target = limit if per_row <= 0 else max(2, min(limit, math.ceil(fixed / per_row)))
    fill_ms = (target - 1) / offered_rps * 1000
    room_ms = min(cap_ms, slo_ms / 4, slo_ms - profile.profiled_ms(target))
    wait = min(fill_ms, room_ms)
    if wait <= 0:
        return Delay(0.0, 1, f"no room in the {slo_ms:.0f} ms SLO to wait for batch mates")
    return Delay(
        round(wait, 3),
        target,
        f"waits up to {wait:.1f} ms for {target} rows: a batch costs {fixed:.2f} ms + {per_row:.3f} ms/row, "
        f"offered {offered_rps:.0f} rows/s",
    )
