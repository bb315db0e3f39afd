"""Wire form of the planner's events: what it decided or did, and why (`GET /v1/events`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

EventKind = Literal["model_autoscaler", "worker_autoscaler"]
Outcome = Literal["decided", "done", "failed"]


class Event(BaseModel):
    """One scaling decision or its outcome."""

    id: int
    at: datetime
    kind: EventKind
    action: str = Field(
        description=(
            "replicate, upgrade, downgrade, remove, load, migrate, request_worker, add_worker, "
            "drain_worker, …"
        )
    )
    model: str | None = None
    variant: str | None = None
    worker: str | None = None
    outcome: Outcome
    reason: str = Field(description="why the planner decided this, with the numbers it used")
    details: dict[str, Any] | None = None


class EventPage(BaseModel):
    """Newest first; pass `before=<smallest id>` for the next page."""

    events: list[Event]
