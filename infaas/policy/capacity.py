"""The capacity of one instance under an SLO, from SERF's queueing model (pure; SEEDS.md §5).

An instance runs one batch at a time (its thread; the variant's threads inside it) and forms each batch
from the queries that queued while the previous one ran. So it is a single server whose unit of work is
a *batch*: SERF's M/D_interf/c with c = 1, i.e. M/D/1, over batches of `b` rows arriving at
(rows/s)/b and served in the profiled p50 at `b` (times the slowdown the executor measured against the
profile: co-location, interference). Its capacity under an SLO is the highest row rate whose predicted
*mean* latency stays within `MEAN_SHARE` of the SLO (the rest covers the spread around the mean: the SLO
is a deadline per query), at the best batch: each profiled batch whose p99 fits `SLO_SHARE` of the SLO
(a query may wait for the batch in progress and then ride the next), up to the mean batch the executor
actually formed while it was kept busy (traffic that forms batches of 2 gets nothing from a 64-row
profile). Without an SLO there is no latency to keep, and capacity is the throughput of back-to-back
batches at the max batch (the profiled saturation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from infaas.policy.serf import max_rate, predict
from infaas.schemas.variants import VariantProfile

SLO_SHARE = 0.5
"""Share of the SLO one batch's compute may take (p99): the rest is the wait for the batch ahead of it."""

MEAN_SHARE = 1.0
"""Share of the SLO the predicted mean latency may take: SERF predicts the mean, the SLO bounds each query."""


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
    """Rows/s one instance carries, the batch it was taken at and the model's numbers (for reasons)."""

    rows_per_s: float
    batch: int
    service_ms: float = 0.0
    """Mean time to run one such batch (profiled p50 × observed slowdown); 0: no batch fits."""
    target_ms: float | None = None
    """The mean latency the capacity keeps (None: no SLO, capacity at saturation)."""
    rows_per_batch: float = 0.0
    """Rows a batch carries (below `batch` when a busy instance forms smaller batches than profiled)."""

    def predicted_ms(self, rows_per_s: float) -> float:
        """SERF's predicted mean latency (queue wait + service, M/D/1 over batches) at `rows_per_s` on
        this instance; inf at or beyond saturation, nan when no batch fits."""
        if self.batch <= 0 or self.service_ms <= 0:
            return math.nan
        rows = self.rows_per_batch or float(self.batch)
        return predict([1000.0 / self.service_ms], max(0.0, rows_per_s) / rows).latency_ms


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
    return 1 if v.profiled_ms(1) <= slo_ms else 0


def throughput(v: VariantProfile, batch: float) -> float:
    """Rows/s of back-to-back batches of `batch` rows (profiled p50 at the next measured batch up),
    never above the profiled saturation throughput."""
    if batch <= 0:
        return 0.0
    p50 = v.profiled_ms(math.ceil(batch), tail=False)
    if not math.isfinite(p50) or p50 <= 0:
        return v.saturation_qps
    return min(v.saturation_qps, batch * 1000.0 / p50)


def batch_capacity(service_ms: float, batch: int, target_ms: float) -> float:
    """Rows/s of an instance running batches of `batch` rows in `service_ms` each whose predicted mean
    latency (M/D/1 over batches) stays within `target_ms`: `batch` × SERF's `max_rate`."""
    if batch <= 0 or not (service_ms > 0 and math.isfinite(service_ms)):
        return 0.0
    return batch * max_rate([1000.0 / service_ms], target_ms)


def service_rate(
    v: VariantProfile, slo_ms: float | None, observed: Observed | None = None, share: float = SLO_SHARE
) -> float:
    """Rows/s an instance *runs* when kept busy at the batch its traffic forms under the SLO (the SLO
    batch, lowered to the observed mean batch, slowed by the observed slowdown): its service rate,
    reached only with an unbounded queue. `instance_capacity` is the rate it may be *offered*."""
    limit: float = slo_batch(v, slo_ms, share)
    if observed is not None and observed.busy >= BUSY and observed.mean_batch > 0:
        limit = min(limit, observed.mean_batch)
    slowdown = max(1.0, observed.slowdown) if observed is not None else 1.0
    return throughput(v, limit) / slowdown


def instance_capacity(
    v: VariantProfile, slo_ms: float | None, observed: Observed | None = None, share: float = SLO_SHARE
) -> Capacity:
    """One instance's capacity under `slo_ms`: the best batch up to the SLO batch (lowered to the
    observed mean batch when the instance was kept busy) by SERF's prediction, each batch's service time
    multiplied by the observed slowdown."""
    limit: float = slo_batch(v, slo_ms, share)
    if observed is not None and observed.busy >= BUSY and observed.mean_batch > 0:
        limit = min(limit, observed.mean_batch)
    slowdown = max(1.0, observed.slowdown) if observed is not None else 1.0
    if slo_ms is None or limit <= 0:
        batch = max(0, math.ceil(limit))
        service = _service_ms(v, batch, slowdown)
        return Capacity(throughput(v, limit) / slowdown, batch, service, None, min(float(batch), limit))
    # A variant only a lone query fits (its p99 needs more than `share` of the SLO) may use the whole SLO.
    target = MEAN_SHARE * slo_ms if v.profiled_ms(1) <= share * slo_ms else slo_ms
    sizes = sorted({p.batch for p in v.latencies if p.batch < limit} | {max(1, math.ceil(limit))})
    best = Capacity(0.0, 0, 0.0, target)
    for b in sizes:
        rows = min(float(b), limit)  # a busy instance forming 2.5-row batches runs them at batch 3's p50
        service = _service_ms(v, b, slowdown)
        rate = min(batch_capacity(service, b, target) * rows / b, throughput(v, rows) / slowdown)
        cap = Capacity(rate, b, service, target, rows)
        if cap.rows_per_s > best.rows_per_s:
            best = cap
    return best


def _service_ms(v: VariantProfile, batch: int, slowdown: float) -> float:
    if batch <= 0:
        return 0.0
    p50 = v.profiled_ms(batch, tail=False)
    return p50 * slowdown if math.isfinite(p50) and p50 > 0 else 0.0
