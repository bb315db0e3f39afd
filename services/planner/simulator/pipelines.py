"""InferLine's estimator: the end-to-end latency of a pipeline's queries under a configuration, by
discrete-event simulation of each stage's centralized batched queue (`serving.batched_departures`, the
simulator's queue model at the granularity of batches) over an arrival trace.

A query enters the root stage at its arrival; a stage's queries arrive when its parent's batch finishes
(plus the dispatch `overhead_ms` of the hop); a conditional stage sees a query with probability
s_child / s_parent (the scale factors), drawn once per trace (`routes`) so that every configuration the
planner compares is estimated on the same queries. A query's latency runs from its arrival to the end of
the last stage it visits. Service times are the profile's p50 batch latencies.

The serving path itself (gateway and dispatcher: HTTP, deserialization, routing, one `overhead_ms` of
its CPU per hop) is a constant delay per hop by default, as InferLine has it. With `path_servers` > 0
it is also a queue: `path_servers` FIFO servers every query holds for its hops' work (hops × overhead,
the stages it visits) before entering the root stage. Under bursty arrivals that queue is where the
tail of a pipeline of fast models forms (bench/papers/pipelines.py --mode real: at CV 4 the constant-delay
estimate missed the real P99 by 6×).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from infaas.schemas.variants import VariantProfile
from services.planner.simulator.batch_queue import waits_kernel
from services.planner.simulator.serving import batched_departures


@dataclass(frozen=True, slots=True)
class StageShape:
    """A stage's place in the tree and s_m, the share of the pipeline's queries that reach it."""

    name: str
    parent: str | None
    scale: float = 1.0


@dataclass(frozen=True, slots=True)
class StageConfig:
    """What serves a stage: a variant, the batch size its replicas take, how many replicas."""

    variant: VariantProfile
    batch: int
    replicas: int

    def service_s(self) -> list[float]:
        return [self.variant.profiled_ms(rows, tail=False) / 1000 for rows in range(1, self.batch + 1)]

    def rows_per_s(self) -> float:
        """μ: what one replica carries running full batches."""
        return self.batch / (self.variant.profiled_ms(self.batch, tail=False) / 1000)


@dataclass(frozen=True)
class Estimate:
    latency_ms: np.ndarray
    """Per query of the trace, end to end."""

    def p(self, q: float) -> float:
        return float(np.percentile(self.latency_ms, q)) if self.latency_ms.size else math.nan

    @property
    def p99(self) -> float:
        return self.p(99)


def routes(shapes: Sequence[StageShape], queries: int, *, seed: int = 0) -> dict[str, np.ndarray]:
    """Which queries visit each stage (boolean masks), parents before children in `shapes`."""
    rng = np.random.default_rng(seed)
    scale = {s.name: s.scale for s in shapes}
    masks: dict[str, np.ndarray] = {}
    for shape in shapes:
        if shape.parent is None:
            masks[shape.name] = np.ones(queries, dtype=bool)
            continue
        on = shape.scale / scale[shape.parent] if scale[shape.parent] > 0 else 0.0
        masks[shape.name] = masks[shape.parent] & (rng.random(queries) < on)
    return masks


def estimate(
    shapes: Sequence[StageShape],
    configs: Mapping[str, StageConfig],
    arrivals: np.ndarray,
    masks: Mapping[str, np.ndarray],
    *,
    overhead_ms: float = 2.0,
    schedules: Mapping[str, Sequence[tuple[float, int]]] | None = None,
    path_servers: int = 0,
) -> Estimate:
    """End-to-end latencies of `arrivals` (sorted, seconds) under `configs`; `shapes` parents first,
    `masks` from `routes` over the same trace; `schedules`: per stage, replica changes over time (a
    tuner's, starting from the config's replicas); `path_servers`: the serving path as that many FIFO
    servers (0: a constant delay per hop)."""
    overhead_s = overhead_ms / 1000
    finished: dict[str, np.ndarray] = {}
    last = np.array(arrivals, dtype=np.float64)
    entered = np.asarray(arrivals, dtype=np.float64)
    if path_servers > 0 and overhead_s > 0 and arrivals.size:
        hops = np.zeros(arrivals.size)
        for shape in shapes:
            hops += masks[shape.name]
        entered = entered + waits_kernel(entered, hops * overhead_s, path_servers)
    for shape in shapes:
        mask = masks[shape.name]
        ready = entered if shape.parent is None else finished[shape.parent]
        ready = ready[mask] + overhead_s
        order = np.argsort(ready, kind="stable")
        config = configs[shape.name]
        done_sorted = batched_departures(
            ready[order],
            replicas=config.replicas,
            batch=config.batch,
            service_s=config.service_s(),
            schedule=(schedules or {}).get(shape.name, ()),
        )
        done = np.empty_like(done_sorted)
        done[order] = done_sorted
        finished[shape.name] = np.full(arrivals.size, np.nan)
        finished[shape.name][mask] = done
        last[mask] = np.maximum(last[mask], done)
    return Estimate((last - arrivals) * 1000)
