"""Where workers come from: the `WorkerProvider` interface the worker autoscaler drives."""

from __future__ import annotations

from abc import ABC, abstractmethod

import redis.asyncio as aioredis

from infaas.policy.selection import WorkerView
from services.planner.event_log import EventLog


class WorkerProvider(ABC):
    """Starts and removes executor workers of a hardware kind."""

    name: str = "provider"

    drains_itself: bool = False
    """True when removal drains the worker on its own (a Kubernetes preStop hook); otherwise the planner
    drains it (`POST /v1/drain?exit=true`) before calling `remove`."""

    @abstractmethod
    async def add(self, hardware: str) -> str:
        """Ask for one more worker of `hardware`; returns a name for the event log. Raises
        `infaas.core.errors.Unavailable` when this provider cannot supply that kind."""

    @abstractmethod
    async def remove(self, worker: WorkerView) -> None:
        """Remove a worker this provider owns (already drained unless `drains_itself`)."""

    @abstractmethod
    async def starting(self) -> dict[str, int]:
        """Workers asked for per hardware kind that are not serving yet."""

    @abstractmethod
    def owns(self, worker: WorkerView) -> bool:
        """Whether `worker` is one this provider may remove (never another system's workers)."""

    async def watch(self, redis: aioredis.Redis, events: EventLog | None) -> None:
        """Start keeping this provider's workers up, if it does that itself (the local provider restarts
        a dead executor process and declares it failed). By default nothing: on Kubernetes the
        Deployment's controller replaces a dead pod."""
        del redis, events

    @abstractmethod
    async def close(self) -> None:
        """On planner shutdown: release clients (local processes are stopped with their planner; a
        Deployment's pods keep serving)."""
