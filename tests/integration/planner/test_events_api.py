"""The planner's event log on Postgres and its `/internal/events` route (what the gateway's
`GET /v1/events` and `infaas events` read)."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from fastapi.testclient import TestClient
from sqlalchemy import delete, update

from infaas.core.config import Settings
from infaas.core.credentials import internal_headers
from infaas.data.db import EventRow, make_engine, utcnow
from infaas.schemas.events import EventPage
from services.planner.app import create_app
from services.planner.event_log import EventLog


def test_events_are_listed_newest_first_filtered_and_paged(settings: Settings) -> None:
    engine = make_engine(settings.resolved_database_url)
    with engine.begin() as conn:
        conn.execute(delete(EventRow))
    log = EventLog(engine)

    async def write() -> list[int]:
        return [
            await log.record(
                kind="model_autoscaler",
                action="replicate",
                outcome="decided",
                reason="headroom 0.9 < 1.05",
                model="m",
                details={"loads": [["m.a", "w2"]]},
            ),
            await log.record(
                kind="model_autoscaler",
                action="replicate",
                outcome="done",
                reason="headroom 0.9 < 1.05",
                model="m",
            ),
            await log.record(
                kind="worker_autoscaler",
                action="add_worker",
                outcome="done",
                reason="mean CPU utilization 85% > 80%",
                worker="cpu-x-1",
            ),
        ]

    ids = asyncio.run(write())
    try:
        app = create_app(settings.model_copy(update={"autoscale_policy": "off"}))
        with TestClient(app, headers=internal_headers(settings.internal_key)) as client:
            page = EventPage.model_validate(client.get("/internal/events").json())
            assert [e.id for e in page.events] == ids[::-1]
            assert page.events[-1].details == {"loads": [["m.a", "w2"]]}
            only_m = client.get("/internal/events", params={"model": "m", "limit": 1}).json()["events"]
            assert [e["id"] for e in only_m] == [ids[1]]
            older = client.get("/internal/events", params={"before": ids[1]}).json()["events"]
            assert [e["id"] for e in older] == [ids[0]]
            workers = client.get("/internal/events", params={"kind": "worker_autoscaler"}).json()["events"]
            assert [e["action"] for e in workers] == ["add_worker"]
            bad = client.get("/internal/events", params={"limit": 0})
            assert bad.status_code == 422 and "error" in bad.json()
    finally:
        with engine.begin() as conn:
            conn.execute(delete(EventRow))
        engine.dispose()


def test_events_older_than_the_retention_are_pruned(settings: Settings) -> None:
    engine = make_engine(settings.resolved_database_url)
    with engine.begin() as conn:
        conn.execute(delete(EventRow))
    log = EventLog(engine)

    async def scenario() -> tuple[int, int]:
        old = await log.record(kind="model_autoscaler", action="remove", outcome="done", reason="old")
        new = await log.record(kind="model_autoscaler", action="remove", outcome="done", reason="new")
        with engine.begin() as conn:  # the first one happened 40 days ago
            conn.execute(update(EventRow).where(EventRow.id == old).values(at=utcnow() - timedelta(days=40)))
        return await log.prune(30 * 86400), new

    try:
        pruned, kept = asyncio.run(scenario())
        assert pruned == 1
        assert [e.id for e in asyncio.run(log.list())] == [kept]
    finally:
        with engine.begin() as conn:
            conn.execute(delete(EventRow))
        engine.dispose()
