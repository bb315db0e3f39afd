"""Warm instances through the real loop: once the registry says a model is ready, the model autoscaler
loads its app's `warm_instances` on a real executor with no query sent, says why in an event, and
does not take the last one away."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import delete
from sqlalchemy.orm import Session

from infaas.data.db import AppRow, ModelRow, make_engine
from tests.integration.planner.conftest import Cluster
from tests.integration.planner.test_model_autoscaler import _ticked_until, autoscaler, ticker

APP, MODEL = "warm-app", "warm-digits"


@pytest.fixture
def ready_model(cluster: Cluster) -> Iterator[Session]:
    """App `warm-app` (warm_instances 1, as created by default) with model `warm-digits` ready, committed
    where the registry process reads it; removed afterwards."""
    engine = make_engine(cluster.settings.resolved_database_url)
    with Session(engine) as session:
        app = AppRow(name=APP, slo_policy="best_effort")
        session.add(app)
        session.flush()
        session.add(
            ModelRow(
                name=MODEL,
                app_id=app.id,
                task="classification",
                format="onnx",
                status="ready",
                artifact_digest=cluster.digest,
                validation_digest=cluster.digest,
                size_bytes=1,
                signature={},
                validation_rows=1,
            )
        )
        session.commit()
        try:
            yield session
        finally:
            session.execute(delete(AppRow).where(AppRow.name == APP))
            session.commit()
    engine.dispose()


async def test_a_ready_model_gets_its_warm_instance_without_a_query(
    cluster: Cluster, redis_url: str, ready_model: Session
) -> None:
    # Two variants meeting the app's (absent) defaults: b is dearer to keep (2 threads' worth of $/s).
    a = cluster.profile(f"{MODEL}.a", model=MODEL, app=APP, cost_per_query=1e-7, saturation_qps=500.0)
    b = cluster.profile(f"{MODEL}.b", model=MODEL, app=APP, cost_per_query=4e-7, saturation_qps=500.0)
    async with autoscaler(cluster, redis_url, a, b) as (scaler, events, _, _):
        tick = ticker(scaler)
        await _ticked_until(lambda: cluster.live_instances(a.id), tick, what="a warm instance", timeout_s=20)
        (done, decided) = await events.list(action="load")
        assert (done.outcome, decided.outcome) == ("done", "decided")
        assert decided.reason.startswith(f"warm: {MODEL} is ready with 0 of its app's 1 warm instance(s)")
        assert f"loading {a.id} ×1" in decided.reason
        assert cluster.live_instances(b.id) == []

        # Idle from here on: more ticks load nothing more and take nothing away (the floor is 1).
        for _ in range(4):
            assert not [d for d in await scaler.tick() if d.loads or d.unloads]
            await scaler.settle()
        assert len(cluster.live_instances(a.id)) == 1

        # warm_instances 0: nothing more is kept; the idle instance may go.
        ready_model.execute(AppRow.__table__.update().where(AppRow.name == APP).values(warm_instances=0))
        ready_model.commit()
        scaler.slos.ttl_s = 0.0
        await _ticked_until(
            lambda: not cluster.live_instances(a.id), tick, what="the instance gone", timeout_s=20
        )
        (removed, *_) = await events.list(action="remove")
        assert "without one instance of" in removed.reason
