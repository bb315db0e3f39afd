"""The event log in the database (table `events`): every scaling decision and its outcome, and what
the registry and the supervisor record there (`infaas.data.events`)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.engine import Engine

from infaas.data.db import EventRow, make_sessionmaker, utcnow
from infaas.data.events import event_row, insert_events
from infaas.schemas.events import Event, EventKind, Outcome


class EventLog:
    """Writes go through a thread so the control loops' event loop never waits on the database."""

    def __init__(self, engine: Engine) -> None:
        self.sessions = make_sessionmaker(engine)

    async def record(
        self,
        *,
        kind: EventKind,
        action: str,
        outcome: Outcome,
        reason: str,
        model: str | None = None,
        variant: str | None = None,
        worker: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> int:
        row = event_row(
            kind=kind,
            action=action,
            outcome=outcome,
            reason=reason,
            model=model,
            variant=variant,
            worker=worker,
            details=details,
        )
        (event_id,) = await asyncio.to_thread(insert_events, self.sessions, [row])
        return event_id

    def _prune(self, older_than_s: float) -> int:
        cutoff = utcnow() - timedelta(seconds=older_than_s)
        with self.sessions() as session, session.begin():
            return int(session.execute(delete(EventRow).where(EventRow.at < cutoff)).rowcount or 0)

    async def prune(self, older_than_s: float) -> int:
        """Delete events older than `older_than_s`; returns how many went."""
        return await asyncio.to_thread(self._prune, older_than_s)

    def _list(
        self, limit: int, before: int | None, model: str | None, kind: str | None, action: str | None
    ) -> list[Event]:
        query = select(EventRow).order_by(EventRow.id.desc()).limit(limit)
        if before is not None:
            query = query.where(EventRow.id < before)
        if model is not None:
            query = query.where(EventRow.model == model)
        if kind is not None:
            query = query.where(EventRow.kind == kind)
        if action is not None:
            query = query.where(EventRow.action == action)
        with self.sessions() as session:
            return [Event.model_validate(r, from_attributes=True) for r in session.scalars(query)]

    async def list(
        self,
        *,
        limit: int = 100,
        before: int | None = None,
        model: str | None = None,
        kind: str | None = None,
        action: str | None = None,
    ) -> list[Event]:
        return await asyncio.to_thread(self._list, limit, before, model, kind, action)
