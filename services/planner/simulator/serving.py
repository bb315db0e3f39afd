"""The serving half of a simulated tick: selection over the simulated instances, each variant's FIFO
queue served by all its instances at once (Lindley's recursion as a running maximum), the latency of
every query (wait, batch compute with log-normal noise, serving overhead) at the capacity of the batch the
traffic forms under its SLO, and the CPU utilization per
worker that the served load implies. `engine.py` runs it tick by tick with the planner."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from infaas.core.errors import InfaasError
from infaas.policy.capacity import service_rate
from infaas.policy.selection import CandidateIndex, Requirements, Snapshot, WorkerView, get_variant
from infaas.schemas.variants import VariantProfile
from services.planner.simulator.batch_queue import departures_kernel


@dataclass
class Instance:
    variant: VariantProfile
    worker: str
    ready_at: float


@dataclass
class VariantQueue:
    free_at: float = 0.0  # when the FIFO server finishes what it holds (fluid)


def departures(a: np.ndarray, mu: float, start: float) -> np.ndarray:
    """FIFO departures at service rate mu (1/s) for sorted arrivals, server free from `start`."""
    idx = np.arange(a.size, dtype=np.float64)
    head = np.maximum.accumulate(np.maximum(a, start) - idx / mu)
    head = np.maximum(head, start)
    return head + (idx + 1) / mu


def serve_tick(
    arr: np.ndarray,
    t: float,
    t_end: float,
    *,
    requirements: Requirements,
    snapshot: Snapshot,
    index: CandidateIndex,
    instances: list[Instance],
    queues: dict[str, VariantQueue],
    served_by: dict[str, int],
    queue_limit_s: float,
    overhead_ms: float,
    overhead_samples_ms: tuple[float, ...],
    rng: np.random.Generator,
) -> np.ndarray:
    """Latencies (ms, NaN = shed) of this tick's arrivals `arr` of one model. A cold start the
    selection asks for joins `instances`; rows served per variant are added to `served_by`."""
    out = np.full(arr.size, np.nan)
    remaining = np.arange(arr.size)
    saturated: set[str] = set()
    while remaining.size:
        try:
            decision = get_variant(requirements, 1, index, snapshot, saturated=frozenset(saturated))
        except InfaasError:
            return out  # overloaded / unmet / no worker: the rest is shed
        v = decision.variant
        hosts = [i for i in instances if i.variant.id == v.id]
        if decision.action == "load" and not hosts and decision.worker is not None:
            hosts = [Instance(v, decision.worker.id, t + v.load_ms / 1000)]  # a cold start by the scheduler
            instances.extend(hosts)
        n = max(1, sum(1 for i in hosts if i.ready_at <= t_end))
        # Each instance serves at the batch its traffic forms under the SLO (infaas/policy/capacity.py's
        # service rate), not at the max-batch saturation an idle profile measured.
        mu = n * (service_rate(v, requirements.slo_ms) or v.saturation_qps)
        q = queues.setdefault(v.id, VariantQueue())
        start = max(q.free_at, min(i.ready_at for i in hosts), t)
        # Room: what the instances finish this tick plus the scheduler's queue limit (a loading
        # instance's queue fills up to that limit while it loads, as in the real scheduler).
        room = int(max(0.0, t_end - start) * mu + queue_limit_s * v.saturation_qps)
        take, remaining = remaining[:room], remaining[room:]
        if take.size == 0:
            saturated.add(v.id)
            continue
        a = arr[take]
        served_by[v.id] = served_by.get(v.id, 0) + int(take.size)
        d = departures(a, mu, start)
        q.free_at = float(d[-1])
        wait = np.maximum(0.0, d - a - 1.0 / mu)
        batch = np.minimum(v.max_batch, 1 + np.floor(wait * v.saturation_qps)).astype(int)
        p50 = np.array([v.profiled_ms(int(b), tail=False) for b in range(1, v.max_batch + 1)])
        p99 = np.array([v.profiled_ms(int(b)) for b in range(1, v.max_batch + 1)])
        sigma = np.log(np.maximum(p99, p50 * 1.0001) / p50) / 2.326
        compute = p50[batch - 1] * np.exp(sigma[batch - 1] * rng.standard_normal(a.size))
        if overhead_samples_ms:
            overhead = rng.choice(np.asarray(overhead_samples_ms), size=a.size)
        else:
            overhead = np.full(a.size, overhead_ms)
        out[take] = wait * 1000 + compute + overhead
        saturated.add(v.id)
    return out


def worker_utilization(
    instances: Sequence[Instance],
    workers: Mapping[str, WorkerView],
    served_by: Mapping[str, int],
    now: float,
    tick_s: float,
) -> dict[str, float]:
    """CPU utilization per worker over the last tick: each instance is busy for its share of its
    variant's served rate over the saturation rate, times its threads, over the worker's cores."""
    active = [i for i in instances if i.ready_at <= now]
    per_variant: dict[str, int] = {}
    for i in active:
        per_variant[i.variant.id] = per_variant.get(i.variant.id, 0) + 1
    busy: dict[str, float] = {}
    for i in active:
        rate = served_by.get(i.variant.id, 0) / tick_s / per_variant[i.variant.id]
        share = min(1.0, rate / i.variant.saturation_qps) if i.variant.saturation_qps > 0 else 0.0
        busy[i.worker] = busy.get(i.worker, 0.0) + share * i.variant.threads
    return {w: min(1.0, b / max(1, workers[w].cores)) for w, b in busy.items() if w in workers}


def batched_departures(
    a: np.ndarray,
    *,
    replicas: int,
    batch: int,
    service_s: Sequence[float],
    schedule: Sequence[tuple[float, int]] = (),
) -> np.ndarray:
    """When each query of a centralized batched queue finishes (InferLine's estimator): sorted arrivals
    `a`, `replicas` servers, each taking up to `batch` queued queries whenever it is free and running
    them for `service_s[rows - 1]` seconds. Exact, event by event, one step per batch (so a trace costs
    what its batches cost: light load runs query by query, heavy load in full batches). `schedule`:
    (time, replicas) changes, sorted (a tuner's); an added replica serves from its time on, a removed
    one finishes its batch first."""
    if replicas < 1:
        raise ValueError(f"a queue needs at least one replica, got {replicas}")
    if not 1 <= batch <= len(service_s):
        raise ValueError(f"batch {batch} needs service times for 1..{batch} rows, got {len(service_s)}")
    changes = np.asarray(schedule, dtype=np.float64).reshape(-1, 2)
    return departures_kernel(
        np.ascontiguousarray(a, dtype=np.float64),
        np.asarray(service_s, dtype=np.float64),
        np.ascontiguousarray(changes[:, 0]),
        changes[:, 1].astype(np.int64),
        int(replicas),
        int(batch),
    )
