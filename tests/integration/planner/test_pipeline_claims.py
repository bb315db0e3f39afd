"""A model a planned pipeline holds is left to the pipeline's tuner: the model autoscaler, on real
executors, Redis and event log, does not replicate it under a load that would make it do so, says once
why, and scales it again once the claim is released (the pipeline re-planned without it, or deleted)."""

from __future__ import annotations

import asyncio
import math
from datetime import UTC, datetime

from infaas.clients.registry import AsyncRegistryClient
from infaas.schemas.pipelines import Pipeline, PipelinePlan, PipelineStage, StagePlan
from services.planner.loops.claims import PipelineClaims
from tests.integration.planner.conftest import Cluster, QuerySource
from tests.integration.planner.test_model_autoscaler import (
    SATURATION,
    _ticked_until,
    assert_all_answered,
    autoscaler,
    ticker,
)


def pipeline(variant: str, *, feasible: bool = True) -> Pipeline:
    plan = PipelinePlan(
        stages=[
            StagePlan(
                stage="read", variant=variant, hardware="cpu", batch=1, replicas=1, scale=1.0, cost_per_s=1e-5
            )
        ],
        cost_per_s=1e-5,
        predicted_p99_ms=20.0,
        rate_qps=40.0,
        feasible=feasible,
        reason="test plan",
    )
    return Pipeline(
        name="reading",
        app="shop",
        slo_ms=100.0,
        min_accuracy=None,
        stages=[PipelineStage(name="read", model="digits")],
        edges=[],
        order=["read"],
        plan=plan,
        created_at=datetime.now(UTC),
    )


async def test_a_model_a_planned_pipeline_holds_is_not_scaled_until_the_claim_is_released(
    cluster: Cluster, queries: QuerySource, redis_url: str
) -> None:
    variant = cluster.profile("digits.a", saturation_qps=SATURATION, cost_per_query=1e-6)
    registry = AsyncRegistryClient(
        cluster.settings.service_url("registry"), internal_key=cluster.settings.internal_key
    )
    # Claims are set here as the tuner sets them from its registry read; never stale, so never re-read.
    claims = PipelineClaims(registry, max_age_s=math.inf)
    claims.update([pipeline(variant.id)], 0.0)
    try:
        async with autoscaler(cluster, redis_url, variant, claims=claims) as (scaler, events, executors, _):
            await executors.load(cluster.executor_urls[0], variant.id)
            tick = ticker(scaler)
            # 40 q/s against 30 carried: unclaimed, this replicates within a few ticks (the test above).
            load = asyncio.create_task(queries.send(variant.id, rate=40, seconds=14))
            for _ in range(12):
                await tick()
                await asyncio.sleep(0.5)
            assert len(cluster.live_instances(variant.id)) == 1
            assert await events.list(action="replicate") == []
            (owned,) = await events.list(action="pipeline_owned")
            assert owned.model == "digits" and owned.variant == variant.id
            assert "stage read of pipeline reading" in owned.reason and "not this loop" in owned.reason
            assert owned.details["pipeline"] == "reading"  # type: ignore[index]

            # An infeasible plan holds nothing: the claim goes, it is said, and the load is scaled.
            claims.update([pipeline(variant.id, feasible=False)], 1.0)
            await _ticked_until(
                lambda: len(cluster.live_instances(variant.id)) == 2, tick, what="a replica", timeout_s=20
            )
            (released,) = await events.list(action="pipeline_released")
            assert released.model == "digits" and "scaled here again" in released.reason
            assert await events.list(action="replicate")
            assert len(await events.list(action="pipeline_owned")) == 1  # said once, not every tick
            await load
        await queries.wait_answered()
        assert_all_answered(queries)
    finally:
        await registry.aclose()
