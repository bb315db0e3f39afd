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

from infaas.policy.selection import InstanceView, WorkerView
from infaas.schemas.variants import VariantProfile
from services.planner.policies.pressure import Pressure, assess, unit_capacity
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
    floor_instances,
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
    pressures = {d.model: assess(d, by_model.get(d.model, []), snapshot, config) for d in snapshot.demands}

    def headroom(d: ModelDemand) -> float:
        return pressures[d.model].effective / d.load_qps if d.load_qps > 0 else float("inf")

    for demand in sorted(snapshot.demands, key=lambda d: (headroom(d), d.model)):
        instances = by_model.get(demand.model, [])
        pressure = pressures[demand.model]
        if pressure.scale_up:
            decisions.extend(_scale_up(demand, instances, pressure, placement, snapshot, config))
            continue
        proposal = _scale_down(demand, instances, pressure, placement, snapshot, config)
        if proposal is None:
            continue
        key, decision, wait_s = proposal
        if decision.action == "hold":  # said, not carried out; the T_v wait starts over afterwards
            decisions.append(decision)
            continue
        since = pending.get(key, snapshot.now)
        if snapshot.now - since >= wait_s - 1e-6:  # float clocks: 100.1 − 100.0 < 0.1
            decisions.append(decision)
            for vid, w in decision.loads:
                placement.reserve(variants[vid], w)
        else:
            still_pending[key] = since
    return Plan(decisions=tuple(decisions), pending=still_pending)


def _counts(instances: list[InstanceView]) -> dict[str, int]:
    out: dict[str, int] = {}
    for i in instances:
        out[i.variant_id] = out.get(i.variant_id, 0) + 1
    return out


def _scale_up(
    demand: ModelDemand,
    instances: list[InstanceView],
    pressure: Pressure,
    placement: Placement,
    snapshot: ClusterSnapshot,
    config: ScalingConfig,
) -> list[Decision]:
    """The cheapest option that fits on the live workers; else a worker request, and meanwhile what
    fits of the cheapest replication."""
    unit = {v.id: unit_capacity(v, demand, snapshot, config).rows_per_s for v in demand.variants}
    options = _scale_up_options(demand, _counts(instances), pressure, unit, config)
    capacity = pressure.effective
    why = (
        f"{pressure.why}: headroom {capacity:.1f}/{demand.load_qps:.1f} rows/s = "
        f"{capacity / demand.load_qps:.2f} < slack threshold {config.slack_threshold}"
    )
    for option in options:
        workers = placement.candidates(option.variant)
        if len(workers) < option.count:
            continue
        return [_apply_option(option, options, workers, instances, placement, demand, unit, why)]
    return _apply_no_room(demand, options, placement, why, config)


def _scale_up_options(
    demand: ModelDemand,
    counts: Mapping[str, int],
    pressure: Pressure,
    unit: Mapping[str, float],
    config: ScalingConfig,
) -> list[_Option]:
    """Every way to carry the load, cheapest first: (a) replicate a running variant, (b) upgrade to
    (or load) a variant of higher capacity that carries it alone."""
    by_id = {v.id: v for v in demand.variants}
    running = [by_id[vid] for vid in sorted(counts)]
    capacity, target = pressure.effective, pressure.target
    options: list[_Option] = []
    for v in running:  # (a) replicate: enough extra instances of a running variant
        if unit[v.id] > 0 and eligible(v, demand, config.slo_share):  # (2) binds new instances too
            k = instances_needed(target - capacity, unit[v.id])
            options.append(_Option("replicate", v, k, action_cost(v, k, config.lam)))
    # (b) upgrade: a variant of the same model with a higher capacity than any running one, meeting
    # the SLO, in enough instances to carry the whole load alone; the running instances go (δ = −N).
    fastest = max((unit[v.id] for v in running), default=0.0)
    removed = sum(action_cost(v, -counts[v.id], config.lam) for v in running)
    for u in demand.variants:
        if u.id in counts or unit[u.id] <= fastest or not eligible(u, demand, config.slo_share):
            continue
        n = instances_needed(target, unit[u.id])
        action = "upgrade" if running else "load"
        options.append(_Option(action, u, n, action_cost(u, n, config.lam) + removed, tuple(running)))
    options.sort(key=lambda o: (o.cost, o.count, o.variant.id))
    return options


def _apply_option(
    option: _Option,
    options: list[_Option],
    workers: list[WorkerView],
    instances: list[InstanceView],
    placement: Placement,
    demand: ModelDemand,
    unit: Mapping[str, float],
    why: str,
) -> Decision:
    """Reserve `option`'s workers (the first of `workers`) and say it, with the next-cheapest rival."""
    chosen = [w.id for w in workers[: option.count]]
    for w in chosen:
        placement.reserve(option.variant, w)
    unloads = []
    for old in option.replaces:
        for w in placement.victims(old.id, instances, len(instances)):
            unloads.append((old.id, w))
    rivals = [o for o in options if o is not option]
    compared = f"; cheapest of {len(options)} options" + (
        f" (next: {rivals[0].action} {rivals[0].variant.id} ×{rivals[0].count} at {fmt_cost(rivals[0].cost)})"
        if rivals
        else ""
    )
    return Decision(
        action=option.action,  # type: ignore[arg-type]
        model=demand.model,
        loads=tuple((option.variant.id, w) for w in chosen),
        unloads=tuple(unloads),
        cost=option.cost,
        reason=f"{why}: {option.action} {option.variant.id} ×{option.count} "
        f"(+{unit[option.variant.id] * option.count:,.0f} rows/s, cost {fmt_cost(option.cost)})" + compared,
    )


def _apply_no_room(
    demand: ModelDemand, options: list[_Option], placement: Placement, why: str, config: ScalingConfig
) -> list[Decision]:
    """No option fits: a worker of the kind the cheapest option needs, and what fits meanwhile."""
    short = options[0] if options else None
    hardware = short.variant.hardware if short else _kind(demand, config)
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


def _kind(demand: ModelDemand, config: ScalingConfig) -> str:
    kinds = sorted({v.hardware for v in demand.variants if eligible(v, demand, config.slo_share)})
    return kinds[0] if kinds else "cpu"


_Proposal = tuple[float, str, Decision, float]
"""A scale-down: its cost (negative: a saving), its pending key, the decision, and its T_v wait."""


def _scale_down(
    demand: ModelDemand,
    instances: list[InstanceView],
    pressure: Pressure,
    placement: Placement,
    snapshot: ClusterSnapshot,
    config: ScalingConfig,
) -> tuple[str, Decision, float] | None:
    """The cheapest-after scale-down that still leaves the headroom, or None; a `hold` decision instead
    when one would be proposed but the model is missing its SLO or the instance is too recently loaded."""
    counts = _counts(instances)
    if not counts:
        return None
    kept_young: list[str] = []
    best = _remove_one(demand, instances, counts, pressure, placement, snapshot, config, kept_young)
    best = _downgrade(demand, instances, counts, pressure, placement, snapshot, config, best, kept_young)
    if best is None and not kept_young:
        return None
    if best is None:
        vid = kept_young[0]
        return _hold(demand, f"held: not removing {vid}: loaded less than {config.keep_loaded_s:g} s ago")
    _, key, decision, wait = best
    if pressure.hold is not None:
        what = ", ".join(sorted({vid for vid, _ in decision.unloads}))
        return _hold(demand, f"held: not {_GERUND[decision.action]} {what} while {pressure.hold}")
    return key, decision, wait


def _remove_one(
    demand: ModelDemand,
    instances: list[InstanceView],
    counts: Mapping[str, int],
    pressure: Pressure,
    placement: Placement,
    snapshot: ClusterSnapshot,
    config: ScalingConfig,
    kept_young: list[str],
) -> _Proposal | None:
    """(a) The best removal of one instance of a running variant that leaves the headroom; variants
    whose only removable instances are too young go to `kept_young`."""
    by_id = {v.id: v for v in demand.variants}
    capacity, target = pressure.effective, pressure.target
    young: dict[str, frozenset[str]] = {}
    for vid, w in pressure.young:
        young[vid] = young.get(vid, frozenset()) | {w}
    total = sum(counts.values())
    best: _Proposal | None = None
    for vid in sorted(counts):
        v = by_id[vid]
        without = capacity - unit_capacity(v, demand, snapshot, config).rows_per_s
        if total - 1 < floor_instances(demand, config) or without < target:
            continue
        victims = placement.victims(vid, instances, 1, keep=young.get(vid, frozenset()))
        if not victims:
            kept_young.append(vid)
            continue
        saving = action_cost(v, -1, config.lam)
        decision = Decision(
            action="remove",
            model=demand.model,
            unloads=((vid, victims[0]),),
            cost=saving,
            reason=f"{pressure.why}; the load fits in {without:,.0f} rows/s without one instance of "
            f"{vid} (headroom ≥ {config.slack_threshold}); saves {fmt_cost(-saving)}",
        )
        candidate = (saving, f"{demand.model}:remove:{vid}", decision, scale_down_wait_s([v], config))
        if best is None or candidate[0] < best[0]:
            best = candidate
    return best


def _downgrade(
    demand: ModelDemand,
    instances: list[InstanceView],
    counts: Mapping[str, int],
    pressure: Pressure,
    placement: Placement,
    snapshot: ClusterSnapshot,
    config: ScalingConfig,
    best: _Proposal | None,
    kept_young: list[str],
) -> _Proposal | None:
    """(b) `best`, or a cheaper downgrade: everything running replaced by fewer or cheaper instances of
    another variant (not while an instance is young: a downgrade replaces them all)."""
    by_id = {v.id: v for v in demand.variants}
    target = pressure.target
    running = [by_id[vid] for vid in sorted(counts)]
    current = sum(cost_per_s(v) * counts[v.id] for v in running)
    for u in demand.variants:
        unit = unit_capacity(u, demand, snapshot, config).rows_per_s
        if u.id in counts or not eligible(u, demand, config.slo_share) or unit <= 0:
            continue
        n = max(floor_instances(demand, config), instances_needed(target, unit) if demand.load_qps > 0 else 0)
        if n == 0:
            continue
        cost = action_cost(u, n, config.lam) - current
        if cost >= 0 or (best is not None and cost >= best[0]):
            continue
        workers = placement.candidates(u)
        if len(workers) < n:
            continue
        if pressure.young:  # a downgrade replaces every instance, the young ones too
            kept_young.append(sorted(pressure.young)[0][0])
            continue
        unloads = tuple((i.variant_id, i.worker_id) for i in instances)
        decision = Decision(
            action="downgrade",
            model=demand.model,
            loads=tuple((u.id, w.id) for w in workers[:n]),
            unloads=unloads,
            cost=cost,
            reason=f"{pressure.why}; {u.id} ×{n} carries it ({unit * n:,.0f} rows/s) at "
            f"{fmt_cost(cost_per_s(u) * n)} instead of {fmt_cost(current)} now; saves {fmt_cost(-cost)} "
            "including the load",
        )
        best = (cost, f"{demand.model}:downgrade:{u.id}", decision, scale_down_wait_s(running, config))
    return best


_GERUND = {"remove": "removing", "downgrade": "downgrading"}


def _hold(demand: ModelDemand, reason: str) -> tuple[str, Decision, float]:
    return f"{demand.model}:hold", Decision(action="hold", model=demand.model, reason=reason), 0.0


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
