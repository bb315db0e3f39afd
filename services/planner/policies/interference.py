"""Interference mitigation (INFaaS §4.1) as a pure function: `migrations(snapshot, since, config)`.

An instance is `interfered` when its batches take 2.5× their profiled latency while it is not
overloaded (`services.executor.instance_state`): something else on its worker — co-located instances, offline
work, another tenant — is slowing it. Selection already routes around it, but that only moves its load
onto the variant's other instances, and the model loses the capacity it paid for. So once an instance
has stayed interfered for `migrate_after_s` (several 2 s monitor periods, so that a burst does not move
anything), the planner re-places it on the least utilized other worker of its hardware kind: load
there first, then drain it here, as every scaling decision is carried out.

INFaaS first tries "idle resources on the same worker" (other cores or another accelerator of that
machine). Our executors do not pin instances to cores, so on one worker there is nothing to move to;
only the re-placement half applies. A target must have room (memory, not already hosting the variant,
not draining), no interfered instance of its own, and a lower online utilization than the worker the
instance leaves — else nothing moves, and the worker autoscaler's own rule (every instance of a
hardware kind interfered → add a worker) is what answers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from services.planner.policies.snapshot import ClusterSnapshot, Decision, Placement, cost_per_s

Key = tuple[str, str]
"""(variant id, worker id): one instance."""


@dataclass(frozen=True, slots=True)
class InterferenceConfig:
    migrate_after_s: float = 10.0
    """How long an instance stays interfered before it is moved; ≤ 0 turns migration off."""
    cooldown_s: float = 60.0
    """A variant moved is not moved again for this long: where every worker is as noisy, its new
    instance soon reads interfered too, and it would otherwise go back and forth every few ticks."""
    lam: float = 1.0
    """λ of the ILP's cost, for the decision's cost: a move costs the new instance's loading time."""


@dataclass(frozen=True)
class Migrations:
    decisions: tuple[Decision, ...]
    since: Mapping[Key, float]
    """When each instance still interfered was first seen so: feed back into the next call."""
    moved: Mapping[str, float]
    """When each variant was last moved, within the cooldown: feed back into the next call."""


def migrations(
    snapshot: ClusterSnapshot,
    since: Mapping[Key, float],
    config: InterferenceConfig,
    *,
    moved: Mapping[str, float] | None = None,
    skip_models: Iterable[str] = (),
) -> Migrations:
    """At most one move per model per call, for instances interfered for `migrate_after_s`; models in
    `skip_models` (another decision of this tick touches them) are only watched."""
    if config.migrate_after_s <= 0:
        return Migrations(decisions=(), since={}, moved={})
    variants = {v.id: (d.model, v) for d in snapshot.demands for v in d.variants}
    workers = {w.id: w for w in snapshot.workers}
    interfered_on = {i.worker_id for i in snapshot.instances if i.state == "interfered"}
    skip = set(skip_models)
    placement = Placement(snapshot)
    still: dict[Key, float] = {}
    recent = {v: t for v, t in (moved or {}).items() if snapshot.now - t < config.cooldown_s}
    decisions: list[Decision] = []
    for i in sorted(snapshot.instances, key=lambda i: (i.variant_id, i.worker_id)):
        key = (i.variant_id, i.worker_id)
        if i.state != "interfered" or i.worker_id not in workers:
            continue
        if i.variant_id not in variants:  # its model is being changed right now: keep the clock
            if key in since:
                still[key] = since[key]
            continue
        first = still[key] = since.get(key, snapshot.now)
        model, variant = variants[i.variant_id]
        if model in skip or variant.id in recent:
            continue
        waited = snapshot.now - first
        if waited < config.migrate_after_s - 1e-6:
            continue
        source = workers[i.worker_id]
        targets = [
            w
            for w in placement.candidates(variant)
            if w.id not in interfered_on and w.utilization < source.utilization
        ]
        if not targets:
            continue
        target = targets[0]
        placement.reserve(variant, target.id)
        skip.add(model)
        del still[key]
        recent[variant.id] = snapshot.now
        decisions.append(
            Decision(
                action="migrate",
                model=model,
                reason=(
                    f"{variant.id} on {source.id} interfered for {waited:.0f} s (batches slower than "
                    f"profiled, not overloaded): re-placed on {target.id}, utilization "
                    f"{target.utilization:.1%} < {source.utilization:.1%}"
                ),
                loads=((variant.id, target.id),),
                unloads=((variant.id, source.id),),
                cost=cost_per_s(variant) * config.lam * variant.load_ms / 1000,
            )
        )
    return Migrations(decisions=tuple(decisions), since=still, moved=recent)
