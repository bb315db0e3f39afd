"""Wire form of the planner's events: what it decided or did, and why (`GET /v1/events`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

EventKind = Literal[
    "model_autoscaler",
    "worker_autoscaler",
    "supervisor",
    "registry",
    "profiler",
    "failure",
    "failover",
    "pipeline_planner",
]
"""Who decided: the planner's two autoscalers; the launcher's supervisor (a service exited, was restarted,
is crash-looping); the registry (state republished to Redis, a model deleted); the profiler side (a
profile's lease lost, profiling again); a worker failure (declared: why and by whom; recovered: each
model's MTTR); the failover that follows it (warm backups placed, warm and progressive failover steps)."""
Outcome = Literal["decided", "done", "failed"]


class Event(BaseModel):
    """One scaling, recovery or restart decision, or its outcome."""

    id: int
    at: datetime
    kind: EventKind
    action: str = Field(
        description=(
            "replicate, upgrade, downgrade, remove, load, migrate, request_worker, add_worker, "
            "drain_worker, exited, restarted, crash_loop, republish, delete, reprofile, declared, "
            "recovered, …"
        )
    )
    model: str | None = None
    variant: str | None = None
    worker: str | None = None
    outcome: Outcome
    reason: str = Field(description="why this was decided or happened, with the numbers used")
    details: dict[str, Any] | None = None


class EventPage(BaseModel):
    """Newest first; pass `before=<smallest id>` for the next page."""

    events: list[Event]
