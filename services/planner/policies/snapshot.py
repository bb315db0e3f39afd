"""What the model autoscalers (greedy and ILP) reason over and what they answer: frozen snapshots in,
decisions with reasons out, and the cost and placement helpers both use. Shared by the planner loop,
the simulator and the benchmarks.

Vocabulary of INFaaS §4.2.1: for variant j of architecture (our *model*) i, Q = saturation QPS,
N = running instances, δ = instances to add (> 0) or remove (< 0), C = hardware cost ($/s per instance),
T_load = load latency, S = the model's latency SLO, L = its incoming load, λ = weight of loading time.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from infaas.policy.capacity import SLO_SHARE, Observed, slo_batch
from infaas.policy.selection import InstanceView, WorkerView
from infaas.schemas.variants import VariantProfile

Action = Literal["load", "replicate", "upgrade", "downgrade", "remove", "migrate", "request_worker", "hold"]

# Instances in these states hold (or will soon hold) capacity; failed ones do not.
CAPACITY_STATES = frozenset({"loading", "active", "overloaded", "interfered"})


@dataclass(frozen=True, slots=True)
class ScalingConfig:
    slack_threshold: float = 1.05
    """Minimum headroom (capacity / load) per model; INFaaS §5 tuned it to 1.05."""
    lam: float = 1.0
    """λ in 1/s: how much a second of loading weighs against a second of hardware cost."""
    min_scale_down_s: float = 5.0
    """Floor under T_v. INFaaS waits T_v = the variant's load latency; our CPU variants load within one
    tick, so without a floor Poisson noise would make them flap."""
    min_instances: int = 1
    """Instances a model with running variants keeps even at zero load (the next query is not a cold
    start); 0 lets idle models go entirely."""
    slo_share: float = SLO_SHARE
    """Share of the SLO one batch may take: capacity is taken at the largest batch that fits it."""
    keep_loaded_s: float = 30.0
    """An instance younger than this is never removed or downgraded away: whoever loaded it (a scale-up,
    or a query with nothing else to run on) needed it moments ago."""
    miss_scale_up: float = 0.05
    """Share of a model's queries shed or late in the window above which it scales up even when the
    capacity estimate says it fits (the estimate is wrong then), provided its instances are busy."""
    settle_s: float = 3.0
    """After an instance of a model appears, its misses are not taken as a reason to scale up again for
    this long: the window still holds the queries from before it."""


@dataclass(frozen=True, slots=True)
class ModelDemand:
    """One model (INFaaS: architecture) as the autoscaler sees it."""

    model: str
    load_qps: float
    """L: rows/s offered to the model's variants over the last window (one-row queries: queries/s)."""
    variants: tuple[VariantProfile, ...]
    """Every profiled variant of the model (the j's)."""
    slo_ms: float | None = None
    """S: the app's default latency SLO; None = no constraint (2)."""
    min_accuracy: float | None = None
    shed_qps: float = 0.0
    """Of `load_qps`: rows/s refused at once (429/503) — demand that no instance saw."""
    late_qps: float = 0.0
    """Of `load_qps`: rows/s answered after their SLO or not in time."""
    missed_share: float = 0.0
    """Share of the window's queries shed or late: > 0 means the model is missing its SLO."""
    warm_instances: int | None = None
    """Instances the model keeps loaded once it is ready, even at zero load (its app's `warm_instances`);
    None: `ScalingConfig.min_instances`."""
    ready: bool = True
    """Whether the model finished profiling: warm instances wait for it (a load during profiling would
    choose from a partial set of variants and disturb the measurements)."""
    at_reference: bool = False
    """Its app states no default accuracy and is not `lossy`: queries that state none are answered only by
    variants as accurate as the registered model, so a warm instance must be one of those."""


@dataclass(frozen=True)
class ClusterSnapshot:
    now: float
    demands: tuple[ModelDemand, ...]
    workers: tuple[WorkerView, ...]
    instances: tuple[InstanceView, ...]
    draining: frozenset[str] = frozenset()
    """Workers being drained: they take no new instance."""
    observed: Mapping[tuple[str, str], Observed] = field(default_factory=dict)
    """(worker, variant) → what the executor measured over its last window."""
    loaded_at: Mapping[tuple[str, str], float] = field(default_factory=dict)
    """(worker, variant) → when the instance was first seen (absent: long ago)."""


@dataclass(frozen=True, slots=True)
class Decision:
    """One scaling action, carried out as loads first and then unloads (never the other way round, so
    capacity only drops once its replacement is active)."""

    action: Action
    model: str
    reason: str
    loads: tuple[tuple[str, str], ...] = ()
    """(variant id, worker id) pairs to load."""
    unloads: tuple[tuple[str, str], ...] = ()
    """(variant id, worker id) pairs to drain and unload once the loads are active."""
    hardware: str | None = None
    """request_worker: the hardware kind that is short."""
    cost: float = 0.0
    """The ILP objective of this action: Σ C·(δ + λ·T_load·max(δ, 0)) in $/s."""


@dataclass(frozen=True)
class Plan:
    decisions: tuple[Decision, ...]
    pending: Mapping[str, float] = field(default_factory=dict)
    """Scale-down proposals waiting out T_v: key → when first proposed. Feed back into the next call."""


def floor_instances(d: ModelDemand, config: ScalingConfig) -> int:
    """Instances no scale-down takes the model below: its app's `warm_instances`, else the config's."""
    return config.min_instances if d.warm_instances is None else d.warm_instances


def cost_per_s(v: VariantProfile) -> float:
    """C: hardware $/s of one instance (the profiler prices $/query at saturation)."""
    return v.cost_per_query * v.saturation_qps


def eligible(v: VariantProfile, d: ModelDemand, share: float = SLO_SHARE) -> bool:
    """May a new instance of `v` serve this model's queries (accuracy and constraint (2))? Constraint (2)
    holds when some batch fits the SLO (`slo_batch`); its capacity is then taken at that batch, not at
    the max batch. For an app that is not `lossy` and states no default accuracy, only variants as
    accurate as the registered model (queries stating nothing are answered by no other). Dominated
    variants are never loaded: selection would not route to them while their dominator runs."""
    if v.dominated:
        return False
    if d.min_accuracy is not None and v.accuracy < d.min_accuracy:
        return False
    if d.at_reference and v.reference_accuracy is not None and v.accuracy < v.reference_accuracy:
        return False
    return slo_batch(v, d.slo_ms, share) > 0


def action_cost(v: VariantProfile, delta: int, lam: float) -> float:
    """INFaaS's Cost(δ) = C·(δ + λ·T_load·max(δ, 0)), T_load in seconds."""
    return cost_per_s(v) * (delta + lam * (v.load_ms / 1000) * max(delta, 0))


def running_counts(instances: Iterable[InstanceView]) -> dict[str, int]:
    """N per variant: instances that hold capacity (loading included, failed not)."""
    out: dict[str, int] = {}
    for i in instances:
        if i.state in CAPACITY_STATES:
            out[i.variant_id] = out.get(i.variant_id, 0) + 1
    return out


NEVER = 10**9
"""Instances needed by a variant with no measured throughput: more than any cluster has."""


def instances_needed(target_qps: float, per_instance: float) -> int:
    """Instances carrying `per_instance` rows/s each that carry `target_qps` (at least one)."""
    if per_instance <= 0:
        return NEVER
    return max(1, math.ceil(target_qps / per_instance - 1e-9))


class Placement:
    """Free room per worker during one planning pass, so that two decisions of the same tick do not
    both count on the same memory. One instance of a variant per worker (the executor's rule)."""

    def __init__(self, snapshot: ClusterSnapshot) -> None:
        self.workers = {w.id: w for w in snapshot.workers if w.id not in snapshot.draining}
        self.free = {w.id: w.memory_bytes - w.memory_used_bytes for w in self.workers.values()}
        self.hosts: dict[str, set[str]] = {}
        self.count: dict[str, int] = {w.id: 0 for w in snapshot.workers}
        for i in snapshot.instances:
            self.hosts.setdefault(i.variant_id, set()).add(i.worker_id)
            self.count[i.worker_id] = self.count.get(i.worker_id, 0) + 1

    def candidates(self, v: VariantProfile) -> list[WorkerView]:
        """Workers that could take an instance of `v`, least utilized first (INFaaS §4.1)."""
        hosting = self.hosts.get(v.id, set())
        fitting = [
            w
            for w in self.workers.values()
            if w.hardware == v.hardware and w.id not in hosting and self.free[w.id] >= v.peak_memory_bytes
        ]
        return sorted(fitting, key=lambda w: (w.utilization, self.count.get(w.id, 0), w.id))

    def reserve(self, v: VariantProfile, worker_id: str) -> None:
        self.free[worker_id] -= v.peak_memory_bytes
        self.hosts.setdefault(v.id, set()).add(worker_id)
        self.count[worker_id] = self.count.get(worker_id, 0) + 1

    def release(self, v: VariantProfile, worker_id: str) -> None:
        if worker_id in self.free:
            self.free[worker_id] += v.peak_memory_bytes
        self.hosts.get(v.id, set()).discard(worker_id)
        self.count[worker_id] = max(0, self.count.get(worker_id, 0) - 1)

    def victims(
        self, vid: str, instances: Iterable[InstanceView], n: int, keep: frozenset[str] = frozenset()
    ) -> list[str]:
        """Workers to unload `n` instances of `vid` from, never those in `keep` (recently loaded): the
        emptiest workers first, so that whole workers become idle and the worker autoscaler can give
        them back."""
        hosts = [
            i.worker_id
            for i in instances
            if i.variant_id == vid and i.state in CAPACITY_STATES and i.worker_id not in keep
        ]
        return sorted(hosts, key=lambda w: (self.count.get(w, 0), w))[:n]


def scale_down_wait_s(variants: Iterable[VariantProfile], config: ScalingConfig) -> float:
    """T_v: the load latency of the variant(s) being scaled down, at least `min_scale_down_s`."""
    return max([config.min_scale_down_s, *(v.load_ms / 1000 for v in variants)])


def fmt_cost(value: float) -> str:
    return f"${value * 3600:.4f}/h"
