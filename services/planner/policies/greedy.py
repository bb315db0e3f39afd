"""INFaaS's greedy model autoscaler (§4.2.2) as a pure function: `plan(snapshot, pending, config)`.

Per model, every tick:
- headroom = Σ N·Q of its instances / L. Below the slack threshold (1.05) it must scale up: compare
  (a) *replicate* a running variant by enough instances and (b) *upgrade* to a variant of the same model
  with a higher saturation throughput that meets the SLO, replacing the running ones — by the ILP's cost
  C·(δ + λ·T_load·max(δ, 0)) — and take the cheaper. When no option fits on the live workers, ask for a
  worker of the hardware kind the cheapest option needs.
- Otherwise, check whether one instance fewer, or a cheaper variant (*downgrade*: lower batch, other
  hardware), still carries the load with the headroom; propose the biggest saving and carry it out only
  once it has been proposed continuously for T_v (the variant's load latency, see `ScalingConfig`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from infaas.policy.selection import InstanceView
from infaas.schemas.variants import VariantProfile
from services.planner.policies.snapshot import (
    CAPACITY_STATES,
    ClusterSnapshot,
    Decision,
    ModelDemand,
    Placement,
    Plan,
    ScalingConfig,
    action_cost,
    cost_per_s,
    eligible,
    fmt_cost,
    instances_needed,
    scale_down_wait_s,
)


@dataclass(frozen=True, slots=True)
class _Option:
    action: str
    variant: VariantProfile
    count: int
    cost: float
    replaces: tuple[VariantProfile, ...] = ()


def plan(snapshot: ClusterSnapshot, pending: Mapping[str, float], config: ScalingConfig) -> Plan:
    """Scaling decisions for every model in the snapshot, most pressed model first."""
    placement = Placement(snapshot)
    decisions: list[Decision] = []
    still_pending: dict[str, float] = {}
    by_model: dict[str, list[InstanceView]] = {}
    variants = {v.id: v for d in snapshot.demands for v in d.variants}
    models = {v.id: d.model for d in snapshot.demands for v in d.variants}
    for i in snapshot.instances:
        if i.variant_id in models and i.state in CAPACITY_STATES:
            by_model.setdefault(models[i.variant_id], []).append(i)

    def headroom(d: ModelDemand) -> float:
        cap = _capacity(d, by_model.get(d.model, []))
        return cap / d.load_qps if d.load_qps > 0 else float("inf")

    for demand in sorted(snapshot.demands, key=lambda d: (headroom(d), d.model)):
        instances = by_model.get(demand.model, [])
        capacity = _capacity(demand, instances)
        target = config.slack_threshold * demand.load_qps
        if demand.load_qps > 0 and capacity < target:
            decisions.extend(_scale_up(demand, instances, capacity, target, placement, config))
            continue
        proposal = _scale_down(demand, instances, capacity, target, placement, config)
        if proposal is None:
            continue
        key, decision, wait_s = proposal
        since = pending.get(key, snapshot.now)
        if snapshot.now - since >= wait_s - 1e-6:  # float clocks: 100.1 − 100.0 < 0.1
            decisions.append(decision)
            for vid, w in decision.loads:
                placement.reserve(variants[vid], w)
        else:
            still_pending[key] = since
    return Plan(decisions=tuple(decisions), pending=still_pending)


def _capacity(demand: ModelDemand, instances: list[InstanceView]) -> float:
    by_id = {v.id: v for v in demand.variants}
    return sum(by_id[i.variant_id].saturation_qps for i in instances if i.variant_id in by_id)


def _counts(instances: list[InstanceView]) -> dict[str, int]:
    out: dict[str, int] = {}
    for i in instances:
        out[i.variant_id] = out.get(i.variant_id, 0) + 1
    return out


def _scale_up(
    demand: ModelDemand,
    instances: list[InstanceView],
    capacity: float,
    target: float,
    placement: Placement,
    config: ScalingConfig,
) -> list[Decision]:
    by_id = {v.id: v for v in demand.variants}
    counts = _counts(instances)
    running = [by_id[vid] for vid in sorted(counts)]
    options: list[_Option] = []
    for v in running:  # (a) replicate: enough extra instances of a running variant
        if v.saturation_qps > 0 and eligible(v, demand):  # constraint (2) binds new instances too
            k = instances_needed(target - capacity, v)
            options.append(_Option("replicate", v, k, action_cost(v, k, config.lam)))
    # (b) upgrade: a variant of the same model with a higher throughput than any running one, meeting
    # the SLO, in enough instances to carry the whole load alone; the running instances go (δ = −N).
    fastest = max((v.saturation_qps for v in running), default=0.0)
    removed = sum(action_cost(v, -counts[v.id], config.lam) for v in running)
    for u in demand.variants:
        if u.id in counts or u.saturation_qps <= fastest or not eligible(u, demand):
            continue
        n = instances_needed(target, u)
        action = "upgrade" if running else "load"
        options.append(_Option(action, u, n, action_cost(u, n, config.lam) + removed, tuple(running)))
    options.sort(key=lambda o: (o.cost, o.count, o.variant.id))
    why = (
        f"headroom {capacity:.1f}/{demand.load_qps:.1f} rows/s = {capacity / demand.load_qps:.2f} "
        f"< slack threshold {config.slack_threshold}"
    )
    for option in options:
        workers = placement.candidates(option.variant)
        if len(workers) < option.count:
            continue
        chosen = [w.id for w in workers[: option.count]]
        for w in chosen:
            placement.reserve(option.variant, w)
        unloads = []
        for old in option.replaces:
            for w in placement.victims(old.id, instances, len(instances)):
                unloads.append((old.id, w))
        rivals = [o for o in options if o is not option]
        compared = f"; cheapest of {len(options)} options" + (
            f" (next: {rivals[0].action} {rivals[0].variant.id} ×{rivals[0].count} at "
            f"{fmt_cost(rivals[0].cost)})"
            if rivals
            else ""
        )
        return [
            Decision(
                action=option.action,  # type: ignore[arg-type]
                model=demand.model,
                loads=tuple((option.variant.id, w) for w in chosen),
                unloads=tuple(unloads),
                cost=option.cost,
                reason=f"{why}: {option.action} {option.variant.id} ×{option.count} "
                f"(+{option.variant.saturation_qps * option.count:.0f} rows/s, cost {fmt_cost(option.cost)})"
                + compared,
            )
        ]
    short = options[0] if options else None
    hardware = short.variant.hardware if short else _kind(demand)
    need = f"{short.action} {short.variant.id} ×{short.count}" if short else "any eligible variant"
    request = Decision(
        action="request_worker",
        model=demand.model,
        hardware=hardware,
        cost=short.cost if short else 0.0,
        reason=f"{why}: no live {hardware} worker has room for {need}; asking for a {hardware} worker",
    )
    # Meanwhile add what fits of the cheapest replication: part of the capacity now beats none until
    # the new workers join (an upgrade only helps whole, since it replaces what runs).
    for option in options:
        if option.action != "replicate":
            continue
        room = placement.candidates(option.variant)[: option.count]
        if not room:
            continue
        for view in room:
            placement.reserve(option.variant, view.id)
        partial = Decision(
            action="replicate",
            model=demand.model,
            loads=tuple((option.variant.id, view.id) for view in room),
            cost=action_cost(option.variant, len(room), config.lam),
            reason=f"{why}: replicate {option.variant.id} ×{len(room)} of the ×{option.count} needed "
            f"(only {len(room)} live {option.variant.hardware} worker(s) have room; the rest waits for "
            "a new worker)",
        )
        return [partial, request]
    return [request]


def _kind(demand: ModelDemand) -> str:
    kinds = sorted({v.hardware for v in demand.variants if eligible(v, demand)})
    return kinds[0] if kinds else "cpu"


def _scale_down(
    demand: ModelDemand,
    instances: list[InstanceView],
    capacity: float,
    target: float,
    placement: Placement,
    config: ScalingConfig,
) -> tuple[str, Decision, float] | None:
    """The cheapest-after scale-down that still leaves the headroom, or None."""
    by_id = {v.id: v for v in demand.variants}
    counts = _counts(instances)
    if not counts:
        return None
    total = sum(counts.values())
    best: tuple[float, str, Decision, float] | None = None
    # (a) one instance fewer of a running variant
    for vid in sorted(counts):
        v = by_id[vid]
        if total - 1 < config.min_instances or capacity - v.saturation_qps < target:
            continue
        worker = placement.victims(vid, instances, 1)[0]
        saving = action_cost(v, -1, config.lam)
        decision = Decision(
            action="remove",
            model=demand.model,
            unloads=((vid, worker),),
            cost=saving,
            reason=f"load {demand.load_qps:.1f} rows/s fits in {capacity - v.saturation_qps:.1f} rows/s "
            f"without one instance of {vid} (headroom ≥ {config.slack_threshold}); saves {fmt_cost(-saving)}",
        )
        candidate = (saving, f"{demand.model}:remove:{vid}", decision, scale_down_wait_s([v], config))
        if best is None or candidate[0] < best[0]:
            best = candidate
    # (b) downgrade: replace everything running with fewer/cheaper instances of another variant
    running = [by_id[vid] for vid in sorted(counts)]
    current = sum(cost_per_s(v) * counts[v.id] for v in running)
    for u in demand.variants:
        if u.id in counts or not eligible(u, demand) or u.saturation_qps <= 0:
            continue
        n = max(config.min_instances, instances_needed(target, u) if demand.load_qps > 0 else 0)
        if n == 0:
            continue
        cost = action_cost(u, n, config.lam) - current
        if cost >= 0 or (best is not None and cost >= best[0]):
            continue
        workers = placement.candidates(u)
        if len(workers) < n:
            continue
        unloads = tuple((i.variant_id, i.worker_id) for i in instances)
        decision = Decision(
            action="downgrade",
            model=demand.model,
            loads=tuple((u.id, w.id) for w in workers[:n]),
            unloads=unloads,
            cost=cost,
            reason=f"load {demand.load_qps:.1f} rows/s is carried by {u.id} ×{n} "
            f"({u.saturation_qps * n:.0f} rows/s) at {fmt_cost(cost_per_s(u) * n)} instead of "
            f"{fmt_cost(current)} now; saves {fmt_cost(-cost)} including the load",
        )
        best = (cost, f"{demand.model}:downgrade:{u.id}", decision, scale_down_wait_s(running, config))
    if best is None:
        return None
    _, key, decision, wait = best
    return key, decision, wait


def plan_horizontal(snapshot: ClusterSnapshot, pending: Mapping[str, float], config: ScalingConfig) -> Plan:
    """The SM+ baseline of INFaaS §6: the same policy restricted to the variants already running, so it
    only replicates and removes replicas (no upgrade or downgrade to another variant)."""
    running = {i.variant_id for i in snapshot.instances if i.state in CAPACITY_STATES}
    demands = tuple(
        replace(d, variants=tuple(v for v in d.variants if v.id in running))
        for d in snapshot.demands
        if any(v.id in running for v in d.variants)
    )
    return plan(replace(snapshot, demands=demands), pending, config)
