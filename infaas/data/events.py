"""Writing one event (table `events`) from any process: the planner's autoscalers, the registry's
recovery loops, the launcher's supervisor. Reading them is the planner's (`GET /internal/events`)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from infaas.data.db import EventRow, utcnow
from infaas.schemas.events import EventKind, Outcome


def event_row(
    *,
    kind: EventKind,
    action: str,
    outcome: Outcome,
    reason: str,
    model: str | None = None,
    variant: str | None = None,
    worker: str | None = None,
    details: dict[str, Any] | None = None,
) -> EventRow:
    return EventRow(
        at=utcnow(),
        kind=kind,
        action=action,
        outcome=outcome,
        reason=reason,
        model=model,
        variant=variant,
        worker=worker,
        details=details,
    )


def insert_events(sessions: sessionmaker[Session], rows: list[EventRow]) -> list[int]:
    """Insert `rows` in one transaction (blocking: async callers run it in a thread); returns their ids."""
    with sessions() as session, session.begin():
        session.add_all(rows)
        session.flush()
        return [r.id for r in rows]


def record_event(sessions: sessionmaker[Session], **fields: Any) -> int:
    """Insert one event (the keyword arguments of `event_row`); returns its id."""
    (event_id,) = insert_events(sessions, [event_row(**fields)])
    return event_id
