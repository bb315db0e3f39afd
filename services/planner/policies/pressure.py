"""How pressed one model is, for the greedy and ILP policies alike (pure): its capacity at the batch
sizes its traffic forms under its SLO (`infaas/policy/capacity.py`) against its demand — every row that
arrived, shed and late ones included — and what keeps it from scaling down.

Rules (issue 19, "demand, not dispatch"):
- scale up when capacity < slack × offered load; and also when queries are being shed or answered late
  (≥ `miss_scale_up` of them) while its instances are busy: the capacity estimate is wrong then, so the
  goodput (rows that met the SLO) stands in for it — unless an instance appeared within `settle_s`;
- never remove or downgrade while any query of the window was shed or late (hysteresis: the decision
  says so), nor take away an instance younger than `keep_loaded_s`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from infaas.policy.capacity import BUSY, Capacity, Observed, instance_capacity
from infaas.policy.selection import InstanceView
from infaas.schemas.variants import VariantProfile
from services.planner.policies.snapshot import CAPACITY_STATES, ClusterSnapshot, ModelDemand, ScalingConfig


@dataclass(frozen=True, slots=True)
class Pressure:
    capacity: float
    """Rows/s the model's instances carry at their realized batches (what the reasons quote)."""
    effective: float
    """The capacity compared with the target: `capacity`, or the goodput when misses prove it wrong."""
    target: float
    """slack × offered rows/s."""
    why: str
    """The numbers, for reasons: offered (of which shed/late) and capacity at which batch."""
    hold: str | None
    """Why no scale-down may happen now (None: it may)."""
    predicted_ms: float
    """SERF's mean latency at the offered load, spread over the instances in proportion to their
    capacity (the busiest of them; inf when saturated, nan without a capacity to spread over)."""
    young: frozenset[tuple[str, str]]
    """(variant, worker) of instances too recently loaded to be taken away."""

    @property
    def scale_up(self) -> bool:
        return self.target > 0 and self.effective < self.target


def _mean(observations: list[Observed]) -> Observed | None:
    if not observations:
        return None
    n = len(observations)
    return Observed(
        served_rps=sum(o.served_rps for o in observations) / n,
        mean_batch=sum(o.mean_batch for o in observations) / n,
        busy=sum(o.busy for o in observations) / n,
        slowdown=sum(o.slowdown for o in observations) / n,
    )


def _predicted_ms(load: float, capacity: float, caps: list[Capacity]) -> float:
    """Mean latency SERF predicts when `load` rows/s spread over instances in proportion to their
    capacity: each then runs at the same share of its own capacity; the slowest answer is quoted."""
    if capacity <= 0 or not caps:
        return math.nan
    return max(c.predicted_ms(load * c.rows_per_s / capacity) for c in caps if c.rows_per_s > 0)


def _keys(instances: Iterable[InstanceView]) -> list[tuple[str, str]]:
    return [(i.worker_id, i.variant_id) for i in instances]


def unit_capacity(
    v: VariantProfile, demand: ModelDemand, snapshot: ClusterSnapshot, config: ScalingConfig
) -> Capacity:
    """Capacity of one more instance of `v`: at the SLO batch, and as slow and as batched as its running
    instances are observed to be (a new replica meets the same traffic). A variant with no running
    instance takes the slowdown observed on its model's running variants of the same hardware: the
    machines and their neighbours, not the variant, made those slower than profiled, and a variant
    judged by its idle profile beside others judged by what they met would always look faster — an
    upgrade to it, then back to the one it replaced, tick after tick."""
    seen = [o for (_, vid), o in snapshot.observed.items() if vid == v.id]
    observed = _mean(seen)
    if observed is None:
        kin = {u.id for u in demand.variants if u.hardware == v.hardware and u.id != v.id}
        borrowed = _mean([o for (_, vid), o in snapshot.observed.items() if vid in kin])
        if borrowed is not None:  # the slowdown only: batches and busy time are the variant's own
            observed = Observed(slowdown=borrowed.slowdown)
    return instance_capacity(v, demand.slo_ms, observed, config.slo_share)


def assess(
    demand: ModelDemand, instances: Iterable[InstanceView], snapshot: ClusterSnapshot, config: ScalingConfig
) -> Pressure:
    by_id = {v.id: v for v in demand.variants}
    held = [i for i in instances if i.variant_id in by_id and i.state in CAPACITY_STATES]
    capacity = 0.0
    parts: dict[str, tuple[int, Capacity]] = {}
    caps: list[Capacity] = []
    for i in held:
        cap = instance_capacity(
            by_id[i.variant_id],
            demand.slo_ms,
            snapshot.observed.get((i.worker_id, i.variant_id)),
            config.slo_share,
        )
        capacity += cap.rows_per_s
        caps.append(cap)
        n, first = parts.get(i.variant_id, (0, cap))
        parts[i.variant_id] = (n + 1, first)
    load = demand.load_qps
    offered = f"offered {load:,.0f} rows/s"
    if demand.shed_qps > 0 or demand.late_qps > 0:
        offered += f" incl. {demand.shed_qps:,.0f} shed, {demand.late_qps:,.0f} late"
    slo = f" under the {demand.slo_ms:g} ms SLO" if demand.slo_ms is not None else ""
    batches = ", ".join(f"{vid} ×{n} at batch ~{c.batch}" for vid, (n, c) in sorted(parts.items()))
    why = f"{offered}; capacity{slo}: {capacity:,.0f} rows/s ({batches or 'no instance'})"
    predicted = _predicted_ms(load, capacity, caps)
    if math.isfinite(predicted) and demand.slo_ms is not None:
        why += f"; predicted mean {predicted:.1f} ms at this load (SERF)"
    elif predicted == math.inf:
        why += "; predicted: saturated at this load (SERF)"
    seen = [snapshot.observed[k] for k in _keys(held) if k in snapshot.observed]
    if seen:
        served = sum(o.served_rps for o in seen)
        why += f"; observed {served:,.0f} rows/s served, busiest {max(o.busy for o in seen):.0%} busy"

    ages = {
        (i.variant_id, i.worker_id): snapshot.now - snapshot.loaded_at[(i.worker_id, i.variant_id)]
        for i in held
        if (i.worker_id, i.variant_id) in snapshot.loaded_at
    }
    young = frozenset(k for k, age in ages.items() if age < config.keep_loaded_s)
    settling = any(age < config.settle_s for age in ages.values())

    effective = capacity
    busiest = max((snapshot.observed[k].busy for k in _keys(held) if k in snapshot.observed), default=0.0)
    saturated = demand.shed_qps > 0 or busiest >= BUSY or any(i.state == "overloaded" for i in held)
    if demand.missed_share >= config.miss_scale_up and saturated and not settling and load > 0:
        goodput = load * (1 - demand.missed_share)
        if goodput < effective:
            effective = goodput
            why += f"; but only {goodput:,.0f} rows/s met the SLO ({demand.missed_share:.0%} missed)"
    hold = None
    if demand.missed_share > 0:
        hold = f"{demand.missed_share:.0%} of queries missed their SLO in the last window ({offered})"
    return Pressure(
        capacity=capacity,
        effective=effective,
        target=config.slack_threshold * load,
        why=why,
        hold=hold,
        young=young,
        predicted_ms=predicted,
    )
