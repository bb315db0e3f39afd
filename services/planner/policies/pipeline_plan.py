"""InferLine's offline planner as a pure policy: the cheapest per-stage configuration (variant, batch,
replicas) whose estimated end-to-end P99 on a sample trace meets the pipeline's SLO.

1. Start every stage at batch 1 and one replica on its fastest variant (the fastest hardware); while the
   estimated P99 misses the SLO, add a replica at the bottleneck (the stage of highest utilization).
2. Then repeat the cheapest feasible move until none lowers the cost (or, at the same cost, the P99):
   IncreaseBatch (×2, and ours beyond the paper ×4, … as moves of their own; each sheds the replicas
   the larger batch makes unneeded), RemoveReplica, DowngradeHW — here to the next cheaper *variant* of
   the stage that keeps its accuracy floor, which covers cheaper hardware and, beyond the paper, cheaper
   optimizations and precisions of the same model.
Every estimate runs on the same trace and the same routing of queries (`simulator.pipelines.routes`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from infaas.schemas.variants import VariantProfile
from services.planner.policies.snapshot import cost_per_s
from services.planner.simulator.pipelines import StageConfig, StageShape, estimate, routes

MAX_REPLICAS = 64
"""Per stage: past this the pipeline is called infeasible instead of growing without bound."""
MAX_UTILIZATION = 0.95
"""A move may not leave a stage above this utilization: a queue near saturation has no stable P99."""
SAME_COST = 1e-9
"""Relative difference under which two variants' $/s are one price (the same hardware and threads,
computed along different float paths)."""


@dataclass(frozen=True)
class PlanStage:
    """A stage to plan: its shape and the variants that may serve it (its accuracy floor already met)."""

    shape: StageShape
    variants: tuple[VariantProfile, ...]


@dataclass(frozen=True)
class PlanResult:
    configs: dict[str, StageConfig]
    cost_per_s: float
    p99_ms: float
    feasible: bool
    reason: str
    moves: list[str] = field(default_factory=list)
    """The moves taken, in order (for the plan's event)."""


def pipeline_cost(configs: dict[str, StageConfig]) -> float:
    return sum(c.replicas * cost_per_s(c.variant) for c in configs.values())


def utilization(config: StageConfig, rate_qps: float, scale: float) -> float:
    """ρ_m = λ·s_m / (k·μ_m)."""
    return rate_qps * scale / (config.replicas * config.rows_per_s())


def plan(
    stages: Sequence[PlanStage],
    arrivals: np.ndarray,
    slo_ms: float,
    *,
    overhead_ms: float = 2.0,
    seed: int = 0,
) -> PlanResult:
    """`stages` parents first; `arrivals` the sample trace (sorted seconds, its mean rate is λ)."""
    shapes = [s.shape for s in stages]
    scale = {s.shape.name: s.shape.scale for s in stages}
    masks = routes(shapes, arrivals.size, seed=seed)
    span = float(arrivals[-1] - arrivals[0]) if arrivals.size > 1 else 1.0
    rate = arrivals.size / max(span, 1e-9)
    moves: list[str] = []

    def p99(configs: dict[str, StageConfig]) -> float:
        return estimate(shapes, configs, arrivals, masks, overhead_ms=overhead_ms).p99

    def stable(configs: dict[str, StageConfig]) -> bool:
        return all(utilization(c, rate, scale[n]) <= MAX_UTILIZATION for n, c in configs.items())

    for stage in stages:
        if not stage.variants:
            return PlanResult(
                {}, math.nan, math.nan, False, f"stage {stage.shape.name!r}: no variant meets its floor"
            )
    configs = {
        s.shape.name: StageConfig(min(s.variants, key=lambda v: v.profiled_ms(1, tail=False)), 1, 1)
        for s in stages
    }
    # 1. Feasibility: replicas at the bottleneck until the estimated P99 meets the SLO.
    while not (stable(configs) and (current := p99(configs)) <= slo_ms):
        name = max(configs, key=lambda n: utilization(configs[n], rate, scale[n]))
        if utilization(configs[name], rate, scale[name]) < 0.5 or configs[name].replicas >= MAX_REPLICAS:
            # More replicas no longer shorten the queues: the fastest variants' own latency misses.
            return PlanResult(
                configs, pipeline_cost(configs), p99(configs), False,
                f"no configuration meets {slo_ms:g} ms: even unqueued, the fastest variants' P99 is over it",
                moves,
            )  # fmt: skip
        configs[name] = replace(configs[name], replicas=configs[name].replicas + 1)
        moves.append(f"add replica at bottleneck {name}")
    # 2. Cost: the cheapest feasible move, until no move lowers the cost.
    by_cost = {s.shape.name: sorted(s.variants, key=cost_per_s) for s in stages}
    # A move must lower the cost, or (ours beyond the paper) keep it and lower the estimated P99: a larger
    # batch on a stage already at one replica costs nothing and buys the slack that a later, cheaper move
    # needs. (cost, P99) falls strictly with every move, so the loop ends.
    while True:
        cost = pipeline_cost(configs)
        best: tuple[float, float, str, dict[str, StageConfig]] | None = None
        for name in configs:
            for label, candidate in _moves(name, configs, by_cost[name], rate, scale[name], p99, slo_ms):
                c = pipeline_cost(candidate)
                if c > cost + 1e-12 or not stable(candidate):
                    continue
                tail = p99(candidate)
                if tail > slo_ms or (c >= cost - 1e-12 and tail >= current - 1e-9):
                    continue
                if best is None or (c, tail) < (best[0], best[1]):
                    best = (c, tail, f"{label} at {name}", candidate)
        if best is None:
            break
        cost, current, label, configs = best
        moves.append(label)
    reason = f"estimated P99 {current:.1f} ms ≤ SLO {slo_ms:g} ms at {rate:.1f} q/s after {len(moves)} moves"
    return PlanResult(configs, pipeline_cost(configs), current, True, reason, moves)


def _moves(
    name: str,
    configs: dict[str, StageConfig],
    cheaper_first: list[VariantProfile],
    rate: float,
    scale: float,
    p99: Callable[[dict[str, StageConfig]], float],
    slo_ms: float,
) -> list[tuple[str, dict[str, StageConfig]]]:
    config = configs[name]
    out: list[tuple[str, dict[str, StageConfig]]] = []
    batch = config.batch * 2
    while batch <= config.variant.max_batch:
        # IncreaseBatch pays off through the replicas a larger batch makes unneeded: the fewest that keep
        # the stage stable and the pipeline feasible. Every doubling is a move of its own, so a batch that
        # only pays off two doublings up (a profile flat at small batches) is still reached.
        bigger = replace(config, batch=batch)
        least = max(1, math.ceil(rate * scale / (bigger.rows_per_s() * MAX_UTILIZATION) - 1e-9))
        for k in range(min(least, config.replicas), config.replicas + 1):
            candidate = replace(bigger, replicas=k)
            if k == config.replicas or p99({**configs, name: candidate}) <= slo_ms:
                out.append((f"IncreaseBatch to {batch}", {**configs, name: candidate}))
                break
        batch *= 2
    if config.replicas > 1:
        out.append(("RemoveReplica", {**configs, name: replace(config, replicas=config.replicas - 1)}))
    # The next cost level down, not the cheapest at once; every variant at that level is a move of its
    # own (variants priced alike differ only by float rounding, which must not pick one of them).
    here = cost_per_s(config.variant)
    cheaper = [v for v in cheaper_first if cost_per_s(v) < here * (1 - SAME_COST)]
    if cheaper:
        level = cost_per_s(cheaper[-1])
        for v in cheaper:
            if cost_per_s(v) >= level * (1 - SAME_COST):
                out.append(
                    (
                        f"Downgrade to {v.id}",
                        {**configs, name: StageConfig(v, min(config.batch, v.max_batch), config.replicas)},
                    )
                )
    return out
