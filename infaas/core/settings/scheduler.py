"""Settings the scheduler's dispatcher reads (in the scheduler service, or embedded in each gateway)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from infaas.core.settings.common import CommonSettings


class SchedulerSettings(CommonSettings):
    """Fields of the dispatcher (`services/scheduler/`): deadlines, cache, admission, dispatch."""

    query_timeout_s: float = Field(default=30.0, gt=0)
    """Hard limit a query waits for a worker, cold loads included, before the scheduler gives up. The
    gateway waits on the scheduler this long plus 5 s."""

    cache_bytes: int = Field(default=64 * 1024 * 1024, ge=0)
    """Memory bound of each scheduler's prediction cache."""

    max_pending_queries: int = Field(default=2048, gt=0)
    """Queries one scheduler holds in flight before it sheds with 503 + Retry-After."""

    app_max_pending: int = Field(default=1024, gt=0)
    """Queries one app may have in flight before it gets 429 + Retry-After."""

    queue_limit_s: float = Field(default=0.5, gt=0)
    """Per variant, at most this many seconds of work (at its profiled saturation rate) queued."""

    dispatch: Literal["push", "streams"] = "push"
    """How the dispatcher hands queries to executors: `push` sends each frame over a persistent TCP
    connection to the chosen instance's worker and reads the answer back on it (four process wake-ups
    per query); `streams` appends it to the variant's Redis stream for whichever worker pulls it and
    takes the answer from a reply channel (eight). Executors serve both at once."""
