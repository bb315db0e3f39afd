"""The capacity of one instance at the batch sizes its traffic forms under an SLO (pure).

A profile's saturation throughput is measured with full max-size batches on an idle machine. Traffic
reaches it only when queries queue deep enough to fill those batches and the SLO leaves room for a full
batch to run; batch-1 arrivals under a 50 ms SLO on a 64-row variant never do. So capacity is taken at
the *realized batch*: the largest profiled batch whose p99 fits the SLO's compute share (a query may wait
for the batch in progress and then ride the next, so it gets about half the SLO), lowered to the mean
batch the executor actually formed while it was kept busy, and divided by the slowdown the executor
measured against the profile (co-location, interference).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from infaas.schemas.variants import VariantProfile

SLO_SHARE = 0.5
"""Share of the SLO one batch's compute may take: the rest is the wait for the batch ahead of it."""


@dataclass(frozen=True, slots=True)
class Observed:
    """What an executor reported about one instance over its last heartbeat window."""

    served_rps: float = 0.0
    """Rows answered per second."""
    mean_batch: float = 0.0
    """Rows per batch run (0: it ran none)."""
    busy: float = 0.0
    """Share of the window it spent computing (≥ ~0.8: batches were limited by what queued, not by
    arrivals, so `mean_batch` is the batch the traffic forms under backlog)."""
    slowdown: float = 1.0
    """Median batch latency / profiled p50 at the same batch (≥ 1 under interference)."""


@dataclass(frozen=True, slots=True)
class Capacity:
    """Rows/s one instance carries, and the batch it was taken at (for reasons)."""

    rows_per_s: float
    batch: int


BUSY = 0.8
"""An instance computing this share of the time has a backlog: its batches are what traffic forms."""


def slo_batch(v: VariantProfile, slo_ms: float | None, share: float = SLO_SHARE) -> int:
    """The largest profiled batch whose p99 fits `share` of the SLO (the max batch without an SLO); 1
    when only a lone query fits the whole SLO; 0 when not even that does (the variant cannot serve)."""
    if slo_ms is None:
        return v.max_batch
    fitting = [p.batch for p in v.latencies if p.batch <= v.max_batch and p.p99_ms <= share * slo_ms]
    if fitting:
        return max(fitting)
    return 1 if v.latency_ms(1) <= slo_ms else 0


def throughput(v: VariantProfile, batch: float) -> float:
    """Rows/s of back-to-back batches of `batch` rows (profiled p50 at the next measured batch up),
    never above the profiled saturation throughput."""
    if batch <= 0:
        return 0.0
    p50 = v.latency_ms(math.ceil(batch), tail=False)
    if not math.isfinite(p50) or p50 <= 0:
        return v.saturation_qps
    return min(v.saturation_qps, batch * 1000.0 / p50)


def instance_capacity(
    v: VariantProfile, slo_ms: float | None, observed: Observed | None = None, share: float = SLO_SHARE
) -> Capacity:
    """One instance's capacity at its realized batch: the SLO batch, lowered to the observed mean batch
    when the instance was kept busy, divided by the observed slowdown."""
    batch: float = slo_batch(v, slo_ms, share)
    if observed is not None and observed.busy >= BUSY and observed.mean_batch > 0:
        batch = min(batch, observed.mean_batch)
    slowdown = max(1.0, observed.slowdown) if observed is not None else 1.0
    return Capacity(rows_per_s=throughput(v, batch) / slowdown, batch=max(0, math.ceil(batch)))
