"""Warm instances (pure): a ready model keeps its app's `warm_instances` loaded even with no queries, so
that the first query is not a cold start (KServe's `minReplicas`, Triton's load at start).

For each ready model the scaling policy left alone this tick, with fewer instances than its floor
(`floor_instances`): load the variant cheapest to keep that meets the app's default requirements
(latency SLO, accuracy, and the registered model's accuracy when the app is not `lossy`; `eligible`),
or more of
the one already running, on the least-utilized workers with room. From then on the scaling policy owns
the instances: it replicates, upgrades and downgrades them with load, and never removes one below the
floor. When no variant meets the defaults, or no worker has room, the decision is a `hold` that says so.
"""

from __future__ import annotations

from collections.abc import Iterable

from infaas.schemas.variants import VariantProfile
from services.planner.policies.snapshot import (
    CAPACITY_STATES,
    ClusterSnapshot,
    Decision,
    ModelDemand,
    Placement,
    ScalingConfig,
    action_cost,
    cost_per_s,
    eligible,
    floor_instances,
    fmt_cost,
)


def _price(v: VariantProfile) -> tuple[float, float, float, str]:
    """Cheapest to keep first (C, hardware $/s of one instance: what a downgrade weighs, so the scaling
    policy has no cheaper variant to move the idle instance to), then the fastest at one row, the
    quickest to load."""
    return (cost_per_s(v), v.profiled_ms(1), v.load_ms, v.id)


def _defaults(demand: ModelDemand) -> str:
    parts = []
    if demand.slo_ms is not None:
        parts.append(f"latency ≤ {demand.slo_ms:g} ms")
    if demand.min_accuracy is not None:
        parts.append(f"accuracy ≥ {demand.min_accuracy:g}")
    elif demand.at_reference:
        parts.append("as accurate as the registered model (app not lossy)")
    return ", ".join(parts) or "none"


def warm_up(
    snapshot: ClusterSnapshot, config: ScalingConfig, *, skip_models: Iterable[str] = ()
) -> tuple[Decision, ...]:
    """Loads that bring every ready model up to its warm floor, with their reasons; holds where none can."""
    skip = set(skip_models)
    placement = Placement(snapshot)
    held: dict[str, list[str]] = {}
    owner = {v.id: d.model for d in snapshot.demands for v in d.variants}
    for i in snapshot.instances:
        if i.variant_id in owner and i.state in CAPACITY_STATES:
            held.setdefault(owner[i.variant_id], []).append(i.variant_id)
    decisions: list[Decision] = []
    for demand in sorted(snapshot.demands, key=lambda d: d.model):
        floor = floor_instances(demand, config)
        running = held.get(demand.model, [])
        short = floor - len(running)
        if demand.model in skip or not demand.ready or short <= 0:
            continue
        fitting = sorted((v for v in demand.variants if eligible(v, demand, config.slo_share)), key=_price)
        why = (
            f"warm: {demand.model} is ready with {len(running)} of its app's {floor} warm instance(s); "
            f"app defaults: {_defaults(demand)}"
        )
        if not fitting:
            reason = f"{why}: held: no variant of {len(demand.variants)} meets the app's defaults"
            decisions.append(Decision(action="hold", model=demand.model, reason=reason))
            continue
        # More of what already runs before anything else: the floor is about instances, not variety.
        order = sorted(fitting, key=lambda v: (v.id not in running, _price(v)))
        loads: list[tuple[str, str]] = []
        for v in order:
            for worker in placement.candidates(v)[: short - len(loads)]:
                placement.reserve(v, worker.id)
                loads.append((v.id, worker.id))
            if len(loads) == short:
                break
        if not loads:
            reason = f"{why}: held: no live worker has room for {fitting[0].id}"
            decisions.append(Decision(action="hold", model=demand.model, reason=reason))
            continue
        by_id = {v.id: v for v in fitting}
        chosen = by_id[loads[0][0]]
        cost = sum(action_cost(by_id[vid], 1, config.lam) for vid, _ in loads)
        counts: dict[str, int] = {}
        for vid, _ in loads:
            counts[vid] = counts.get(vid, 0) + 1
        what = ", ".join(f"{vid} ×{n}" for vid, n in counts.items())
        decisions.append(
            Decision(
                action="load",
                model=demand.model,
                loads=tuple(loads),
                cost=cost,
                reason=f"{why}: loading {what}; {chosen.id} is the cheapest to keep that meets them "
                f"({fmt_cost(cost_per_s(chosen))}, {chosen.profiled_ms(1):.3f} ms p99 at one row, accuracy "
                f"{chosen.accuracy:.4f}; {len(fitting)} variant(s) eligible)",
            )
        )
    return tuple(decisions)
