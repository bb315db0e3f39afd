"""A discrete-time, event-driven simulation of the serving system that reuses the real policies.

Time advances in planner ticks (1 s). Events inside a tick are handled in bulk with NumPy; the serving
half (selection, queues, latency) is `serving.py`:
- **Selection** per model and tick with the real `infaas.policy.selection.get_variant` over a `CandidateIndex`
  and a `Snapshot` of the simulated instances (cheapest active variant meeting the SLO; a variant whose
  queue holds `queue_limit_s` of its saturation throughput is skipped like the scheduler does, the next
  one takes the overflow, and what no variant can take is shed — counted as an SLO violation).
- **Queues**: each variant's stream is a FIFO served by all its instances together at rate
  μ = N·saturation_qps. Departures follow Lindley's recursion, vectorized as a running maximum:
  D_i = (i+1)/μ + max_{j≤i}(A_j − j/μ), carried across ticks. A query's latency is its wait for the
  server, plus the compute time of the batch it rides in (queries ahead of it on its instance, capped at
  the max batch; p50 from the profile with log-normal noise whose p99 is the profiled p99), plus a fixed
  serving overhead (the path through gateway, scheduler and Redis).
- **Planner**: every tick the real model autoscaler (`greedy.plan` or `ilp.plan`) sees a
  `ClusterSnapshot` with the load measured over the last `meter_window_s`; a load becomes an active
  instance after the variant's profiled load time; instances it replaces are drained once the new ones
  are active. `request_worker` adds a worker after `worker_start_s` (a VM or pod start).
- **Cost**: every instance (loading ones included) costs its profiled $/s.
Baselines: `static` (no planner: the initial instances stay; INFaaS's Clipper+) and `horizontal`
(the planner restricted to the initial variant: replicas only; INFaaS's SM+).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from infaas.policy.selection import (
    CandidateIndex,
    InstanceView,
    Requirements,
    Snapshot,
    WorkerView,
)
from infaas.schemas.variants import VariantProfile
from services.planner.policies import greedy, ilp
from services.planner.policies.snapshot import (
    ClusterSnapshot,
    Decision,
    ModelDemand,
    Plan,
    ScalingConfig,
    cost_per_s,
)
from services.planner.policies.worker_pool import WorkerConfig, WorkerDecision, WorkerSnapshot
from services.planner.policies.worker_pool import plan as plan_workers
from services.planner.simulator.serving import Instance, VariantQueue, serve_tick, worker_utilization

Policy = Literal["greedy", "ilp", "static", "horizontal"]


@dataclass(frozen=True)
class SimModel:
    """One model: its variants, requirements and arrival times (seconds from 0)."""

    name: str
    variants: tuple[VariantProfile, ...]
    arrivals: np.ndarray
    slo_ms: float | None = None
    min_accuracy: float | None = None


@dataclass(frozen=True)
class SimConfig:
    policy: Policy = "greedy"
    scaling: ScalingConfig = field(default_factory=ScalingConfig)
    tick_s: float = 1.0
    meter_window_s: float = 2.0
    queue_limit_s: float = 0.5
    overhead_ms: float = 2.0
    overhead_samples_ms: tuple[float, ...] = ()
    """Measured serving overheads (latency minus compute, from a calibration run): when given, each
    query's overhead is drawn from them instead of the fixed `overhead_ms`, so the path's own tail
    (processes, Redis, the event loops) shows in the simulated percentiles."""
    worker_start_s: float = 30.0
    worker_template: WorkerView | None = None
    """What a requested worker looks like (None: no workers are added)."""
    max_workers: int = 1000
    workers: WorkerConfig | None = None
    """The worker autoscaler (`policies.worker_pool.plan`) every `worker_tick_s`: adds workers on
    utilization/interference/overload/requests and removes idle ones. None: a `request_worker` starts
    one directly (while none of that kind is starting)."""
    worker_tick_s: float = 2.0
    seed: int = 0


@dataclass
class SimResult:
    arrivals: np.ndarray
    latency_ms: np.ndarray
    """Per query (all models, in model order then arrival order); NaN = shed."""
    slo_ms: np.ndarray
    tick_t: np.ndarray
    offered: np.ndarray
    served: np.ndarray
    violations: np.ndarray
    cost: np.ndarray
    """$ spent in each tick."""
    instances: np.ndarray
    decisions: list[tuple[float, Decision]]
    workers: np.ndarray = field(default_factory=lambda: np.empty(0))
    """Live workers in each tick."""
    worker_decisions: list[tuple[float, WorkerDecision]] = field(default_factory=list)

    def p(self, q: float) -> float:
        ok = self.latency_ms[~np.isnan(self.latency_ms)]
        return float(np.percentile(ok, q)) if ok.size else math.nan

    @property
    def violation_ratio(self) -> float:
        bad = np.isnan(self.latency_ms) | (self.latency_ms > self.slo_ms)
        return float(bad.mean()) if bad.size else 0.0


def simulate(
    models: Sequence[SimModel],
    workers: Sequence[WorkerView],
    initial: Sequence[tuple[str, str]],
    duration_s: float,
    config: SimConfig,
) -> SimResult:
    """Run the simulation; `initial` is (variant id, worker id) instances active at t = 0."""
    rng = np.random.default_rng(config.seed)
    by_id = {v.id: v for m in models for v in m.variants}
    workers_now: dict[str, WorkerView] = {w.id: w for w in workers}
    instances: list[Instance] = [Instance(by_id[v], w, 0.0) for v, w in initial]
    queues: dict[str, VariantQueue] = {}
    # The baselines serve fixed variants (their queries name them): selection sees only those.
    fixed = {v for v, _ in initial}
    indexes = {
        m.name: CandidateIndex(
            [v for v in m.variants if v.id in fixed]
            if config.policy in ("static", "horizontal")
            else m.variants
        )
        for m in models
    }
    policy = _policy(config)
    pending: Mapping[str, float] = {}
    scheduled_unloads: list[tuple[list[Instance], list[tuple[str, str]]]] = []
    new_workers: list[tuple[float, WorkerView]] = []
    decisions: list[tuple[float, Decision]] = []
    worker_decisions: list[tuple[float, WorkerDecision]] = []
    asks: dict[str, str] = {}
    idle_since: Mapping[str, float] = {}
    served_by: dict[str, int] = {}
    workers_count = np.zeros(int(math.ceil(duration_s / config.tick_s)))
    ticks = int(math.ceil(duration_s / config.tick_s))
    tick_t = np.arange(ticks) * config.tick_s
    offered, served, violations, cost, count = (np.zeros(ticks) for _ in range(5))
    latency = [np.full(m.arrivals.size, np.nan) for m in models]
    cursors = [np.searchsorted(m.arrivals, tick_t) for m in models]
    ends = [np.searchsorted(m.arrivals, tick_t + config.tick_s) for m in models]

    for k, t in enumerate(tick_t):
        t_end = t + config.tick_s
        # Workers whose start completed; unloads whose replacements are now active.
        for started in [w for w in new_workers if w[0] <= t]:
            workers_now[started[1].id] = started[1]
            new_workers.remove(started)
        for change in list(scheduled_unloads):
            if all(i.ready_at <= t for i in change[0]):
                gone = set(change[1])
                instances = [i for i in instances if (i.variant.id, i.worker) not in gone or i in change[0]]
                scheduled_unloads.remove(change)
        active = [i for i in instances if i.ready_at <= t]
        snapshot = Snapshot(
            variants=by_id,
            instances=tuple(InstanceView(i.worker, i.variant.id, "active") for i in active),
            workers=tuple(workers_now.values()),
        )
        for m_i, model in enumerate(models):
            lo, hi = cursors[m_i][k], ends[m_i][k]
            if hi <= lo:
                continue
            arr = model.arrivals[lo:hi]
            offered[k] += arr.size
            lat = serve_tick(
                arr,
                t,
                t_end,
                requirements=Requirements(latency_ms=model.slo_ms, min_accuracy=model.min_accuracy),
                snapshot=snapshot,
                index=indexes[model.name],
                instances=instances,
                queues=queues,
                served_by=served_by,
                queue_limit_s=config.queue_limit_s,
                overhead_ms=config.overhead_ms,
                overhead_samples_ms=config.overhead_samples_ms,
                rng=rng,
            )
            latency[m_i][lo:hi] = lat
            ok = ~np.isnan(lat)
            served[k] += ok.sum()
            slo = model.slo_ms if model.slo_ms is not None else math.inf
            violations[k] += (~ok).sum() + (lat[ok] > slo).sum()
        cost[k] = sum(cost_per_s(i.variant) for i in instances) * config.tick_s
        count[k] = len(instances)
        workers_count[k] = len(workers_now)
        if policy is None:
            continue
        cluster = _cluster(models, instances, workers_now, t_end, config)
        plan = policy(cluster, pending, config.scaling)
        pending = plan.pending
        asks.clear()  # what the latest tick still lacks, not what an earlier one did
        for d in plan.decisions:
            decisions.append((t_end, d))
            if d.action == "request_worker":
                asks[d.hardware or "cpu"] = d.reason
                if config.workers is None and not any(w.hardware == d.hardware for _, w in new_workers):
                    _start_worker(d.hardware or "cpu", t_end, workers_now, new_workers, config)
                continue
            added = [Instance(by_id[v], w, t_end + by_id[v].load_ms / 1000) for v, w in d.loads]
            instances.extend(added)
            if d.unloads:
                scheduled_unloads.append((added, list(d.unloads)))
        if config.workers is not None and k % max(1, round(config.worker_tick_s / config.tick_s)) == 0:
            utilization = worker_utilization(instances, workers_now, served_by, t_end, config.tick_s)
            views = tuple(replace(w, utilization=utilization.get(w.id, 0.0)) for w in workers_now.values())
            starting: dict[str, int] = {}
            for _, w in new_workers:
                starting[w.hardware] = starting.get(w.hardware, 0) + 1
            result = plan_workers(
                WorkerSnapshot(
                    now=t_end,
                    workers=views,
                    instances=tuple(InstanceView(i.worker, i.variant.id, "active") for i in instances),
                    requests=dict(asks),
                    starting=starting,
                ),
                idle_since,
                config.workers,
            )
            idle_since = dict(result.idle_since)
            asks.clear()
            for wd in result.decisions:
                worker_decisions.append((t_end, wd))
                if wd.action == "add_worker":
                    _start_worker(wd.hardware, t_end, workers_now, new_workers, config)
                elif wd.worker is not None and not any(i.worker == wd.worker for i in instances):
                    workers_now.pop(wd.worker, None)  # idle: nothing to drain
        served_by.clear()
        # workers' memory as the next snapshot sees it
        used: dict[str, int] = {}
        for i in instances:
            used[i.worker] = used.get(i.worker, 0) + i.variant.peak_memory_bytes
        workers_now = {w: replace(v, memory_used_bytes=used.get(w, 0)) for w, v in workers_now.items()}

    slo_all = (
        np.concatenate(
            [np.full(m.arrivals.size, m.slo_ms if m.slo_ms is not None else math.inf) for m in models]
        )
        if models
        else np.empty(0)
    )
    return SimResult(
        arrivals=np.concatenate([m.arrivals for m in models]) if models else np.empty(0),
        latency_ms=np.concatenate(latency) if models else np.empty(0),
        slo_ms=slo_all,
        tick_t=tick_t,
        offered=offered,
        served=served,
        violations=violations,
        cost=cost,
        instances=count,
        decisions=decisions,
        workers=workers_count,
        worker_decisions=worker_decisions,
    )


def _start_worker(
    hardware: str,
    now: float,
    workers_now: Mapping[str, WorkerView],
    new_workers: list[tuple[float, WorkerView]],
    config: SimConfig,
) -> None:
    template = config.worker_template
    if template is None or len(workers_now) + len(new_workers) >= config.max_workers:
        return
    wid = f"sim-{len(workers_now) + len(new_workers)}-{now:.0f}"
    new_workers.append((now + config.worker_start_s, replace(template, id=wid, hardware=hardware)))


def _cluster(
    models: Sequence[SimModel],
    instances: list[Instance],
    workers: Mapping[str, WorkerView],
    t_end: float,
    config: SimConfig,
) -> ClusterSnapshot:
    window = config.meter_window_s
    demands = []
    for m in models:
        lo = np.searchsorted(m.arrivals, t_end - window)
        hi = np.searchsorted(m.arrivals, t_end)
        demands.append(ModelDemand(m.name, (hi - lo) / window, m.variants, m.slo_ms, m.min_accuracy))
    views = tuple(
        InstanceView(i.worker, i.variant.id, "active" if i.ready_at <= t_end else "loading")
        for i in instances
    )
    return ClusterSnapshot(
        now=t_end, demands=tuple(demands), workers=tuple(workers.values()), instances=views
    )


def _policy(
    config: SimConfig,
) -> Callable[[ClusterSnapshot, Mapping[str, float], ScalingConfig], Plan] | None:
    if config.policy == "static":
        return None
    if config.policy == "ilp":
        return ilp.plan
    if config.policy == "greedy":
        return greedy.plan
    return greedy.plan_horizontal
