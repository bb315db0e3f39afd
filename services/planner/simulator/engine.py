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
    run = _Run.begin(models, workers, initial, duration_s, config)
    policy = _policy(config)
    worker_every = max(1, round(config.worker_tick_s / config.tick_s))
    for k, t in enumerate(run.tick_t):
        t_end = t + config.tick_s
        run.bring_up(t)
        run.serve(k, t, t_end)
        run.meter(k)
        if policy is None:
            continue
        cluster = _cluster(models, run.instances, run.workers_now, t_end, config)
        run.apply_plan(policy(cluster, run.pending, config.scaling), t_end)
        if config.workers is not None and k % worker_every == 0:
            run.scale_workers(t_end, config.workers)
        run.end_tick()
    return run.result()


@dataclass
class _Run:
    """One simulation's state between ticks, and what each tick recorded."""

    models: Sequence[SimModel]
    config: SimConfig
    rng: np.random.Generator
    by_id: dict[str, VariantProfile]
    workers_now: dict[str, WorkerView]
    instances: list[Instance]
    indexes: dict[str, CandidateIndex]
    tick_t: np.ndarray
    queues: dict[str, VariantQueue] = field(default_factory=dict)
    pending: Mapping[str, float] = field(default_factory=dict)
    scheduled_unloads: list[tuple[list[Instance], list[tuple[str, str]]]] = field(default_factory=list)
    """Instances loaded by a decision, and the (variant, worker) instances they replace once active."""
    new_workers: list[tuple[float, WorkerView]] = field(default_factory=list)
    """Workers starting, with the time they are up."""
    decisions: list[tuple[float, Decision]] = field(default_factory=list)
    worker_decisions: list[tuple[float, WorkerDecision]] = field(default_factory=list)
    asks: dict[str, str] = field(default_factory=dict)
    idle_since: Mapping[str, float] = field(default_factory=dict)
    served_by: dict[str, int] = field(default_factory=dict)
    records: dict[str, np.ndarray] = field(default_factory=dict)
    """Per tick: offered, served, violations, cost, instances, workers."""
    latency: list[np.ndarray] = field(default_factory=list)
    cursors: list[np.ndarray] = field(default_factory=list)
    ends: list[np.ndarray] = field(default_factory=list)

    @classmethod
    def begin(
        cls,
        models: Sequence[SimModel],
        workers: Sequence[WorkerView],
        initial: Sequence[tuple[str, str]],
        duration_s: float,
        config: SimConfig,
    ) -> _Run:
        by_id = {v.id: v for m in models for v in m.variants}
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
        ticks = int(math.ceil(duration_s / config.tick_s))
        tick_t = np.arange(ticks) * config.tick_s
        return cls(
            models=models,
            config=config,
            rng=np.random.default_rng(config.seed),
            by_id=by_id,
            workers_now={w.id: w for w in workers},
            instances=[Instance(by_id[v], w, 0.0) for v, w in initial],
            indexes=indexes,
            tick_t=tick_t,
            records={name: np.zeros(ticks) for name in _RECORDS},
            latency=[np.full(m.arrivals.size, np.nan) for m in models],
            cursors=[np.searchsorted(m.arrivals, tick_t) for m in models],
            ends=[np.searchsorted(m.arrivals, tick_t + config.tick_s) for m in models],
        )

    def bring_up(self, t: float) -> None:
        """Workers whose start completed; unloads whose replacements are now active."""
        for started in [w for w in self.new_workers if w[0] <= t]:
            self.workers_now[started[1].id] = started[1]
            self.new_workers.remove(started)
        for change in list(self.scheduled_unloads):
            if all(i.ready_at <= t for i in change[0]):
                gone = set(change[1])
                self.instances = [
                    i for i in self.instances if (i.variant.id, i.worker) not in gone or i in change[0]
                ]
                self.scheduled_unloads.remove(change)

    def serve(self, k: int, t: float, t_end: float) -> None:
        """Serve tick `k`'s arrivals of every model on the instances active at its start."""
        active = [i for i in self.instances if i.ready_at <= t]
        snapshot = Snapshot(
            variants=self.by_id,
            instances=tuple(InstanceView(i.worker, i.variant.id, "active") for i in active),
            workers=tuple(self.workers_now.values()),
        )
        offered, served, violations = (self.records[n] for n in ("offered", "served", "violations"))
        for m_i, model in enumerate(self.models):
            lo, hi = self.cursors[m_i][k], self.ends[m_i][k]
            if hi <= lo:
                continue
            arr = model.arrivals[lo:hi]
            offered[k] += arr.size
            lat = serve_tick(
                arr,
                t,
                t_end,
                requirements=Requirements(slo_ms=model.slo_ms, min_accuracy=model.min_accuracy),
                snapshot=snapshot,
                index=self.indexes[model.name],
                instances=self.instances,
                queues=self.queues,
                served_by=self.served_by,
                queue_limit_s=self.config.queue_limit_s,
                overhead_ms=self.config.overhead_ms,
                overhead_samples_ms=self.config.overhead_samples_ms,
                rng=self.rng,
            )
            self.latency[m_i][lo:hi] = lat
            ok = ~np.isnan(lat)
            served[k] += ok.sum()
            slo = model.slo_ms if model.slo_ms is not None else math.inf
            violations[k] += (~ok).sum() + (lat[ok] > slo).sum()

    def meter(self, k: int) -> None:
        """Tick `k`'s cost (loading instances included), instances and workers."""
        self.records["cost"][k] = sum(cost_per_s(i.variant) for i in self.instances) * self.config.tick_s
        self.records["instances"][k] = len(self.instances)
        self.records["workers"][k] = len(self.workers_now)

    def apply_plan(self, plan: Plan, t_end: float) -> None:
        """The model autoscaler's decisions: loads start now (active after their load time), their
        unloads wait for them, and a `request_worker` is remembered for the worker autoscaler (or,
        without one, starts a worker of that kind unless one is starting)."""
        self.pending = plan.pending
        self.asks.clear()  # what the latest tick still lacks, not what an earlier one did
        for d in plan.decisions:
            self.decisions.append((t_end, d))
            if d.action == "request_worker":
                self.asks[d.hardware or "cpu"] = d.reason
                starting = any(w.hardware == d.hardware for _, w in self.new_workers)
                if self.config.workers is None and not starting:
                    self._start_worker(d.hardware or "cpu", t_end)
                continue
            added = [Instance(self.by_id[v], w, t_end + self.by_id[v].load_ms / 1000) for v, w in d.loads]
            self.instances.extend(added)
            if d.unloads:
                self.scheduled_unloads.append((added, list(d.unloads)))

    def scale_workers(self, t_end: float, workers: WorkerConfig) -> None:
        """One round of the worker autoscaler over the measured utilization and the tick's asks."""
        utilization = worker_utilization(
            self.instances, self.workers_now, self.served_by, t_end, self.config.tick_s
        )
        views = tuple(replace(w, utilization=utilization.get(w.id, 0.0)) for w in self.workers_now.values())
        starting: dict[str, int] = {}
        for _, w in self.new_workers:
            starting[w.hardware] = starting.get(w.hardware, 0) + 1
        result = plan_workers(
            WorkerSnapshot(
                now=t_end,
                workers=views,
                instances=tuple(InstanceView(i.worker, i.variant.id, "active") for i in self.instances),
                requests=dict(self.asks),
                starting=starting,
            ),
            self.idle_since,
            workers,
        )
        self.idle_since = dict(result.idle_since)
        self.asks.clear()
        for wd in result.decisions:
            self.worker_decisions.append((t_end, wd))
            if wd.action == "add_worker":
                self._start_worker(wd.hardware, t_end)
            elif wd.worker is not None and not any(i.worker == wd.worker for i in self.instances):
                self.workers_now.pop(wd.worker, None)  # idle: nothing to drain

    def end_tick(self) -> None:
        """Forget the tick's served rows; the workers' memory as the next snapshot sees it."""
        self.served_by.clear()
        used: dict[str, int] = {}
        for i in self.instances:
            used[i.worker] = used.get(i.worker, 0) + i.variant.peak_memory_bytes
        self.workers_now = {
            w: replace(v, memory_used_bytes=used.get(w, 0)) for w, v in self.workers_now.items()
        }

    def _start_worker(self, hardware: str, now: float) -> None:
        template = self.config.worker_template
        if template is None or len(self.workers_now) + len(self.new_workers) >= self.config.max_workers:
            return
        wid = f"sim-{len(self.workers_now) + len(self.new_workers)}-{now:.0f}"
        self.new_workers.append(
            (now + self.config.worker_start_s, replace(template, id=wid, hardware=hardware))
        )

    def result(self) -> SimResult:
        models = self.models
        slo_all = (
            np.concatenate(
                [np.full(m.arrivals.size, m.slo_ms if m.slo_ms is not None else math.inf) for m in models]
            )
            if models
            else np.empty(0)
        )
        return SimResult(
            arrivals=np.concatenate([m.arrivals for m in models]) if models else np.empty(0),
            latency_ms=np.concatenate(self.latency) if models else np.empty(0),
            slo_ms=slo_all,
            tick_t=self.tick_t,
            offered=self.records["offered"],
            served=self.records["served"],
            violations=self.records["violations"],
            cost=self.records["cost"],
            instances=self.records["instances"],
            decisions=self.decisions,
            workers=self.records["workers"],
            worker_decisions=self.worker_decisions,
        )


_RECORDS = ("offered", "served", "violations", "cost", "instances", "workers")


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
