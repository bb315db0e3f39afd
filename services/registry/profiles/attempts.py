"""Profiling attempts of a model: starting one, a profiler claiming it, refusing stale ones, and
profiling again a model whose profiler is gone.

Every enqueue is a new attempt (`models.profile_attempt`), carried by the task; a profiler claims the
attempt before it works and reports with its number, so a redelivered or superseded task is refused
(409) instead of profiling a model twice or overwriting a newer attempt's results.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any, Protocol, cast

import redis
from sqlalchemy import CursorResult, Update, update
from sqlalchemy.orm import Session

from infaas.clients.profiler import ProfileLease, leases_of
from infaas.core.errors import Conflict, NotFound, Unavailable
from infaas.data.db import ModelRow, utcnow
from infaas.data.events import event_row
from infaas.runtimes.hardware import KINDS
from services.registry import repository as repo
from services.registry.profiles.recovery import PROFILING

log = logging.getLogger("infaas.registry")


class ProfileQueue(Protocol):
    def enqueue(self, model_id: int, hardware: str, attempt: int) -> None: ...


def start_attempt(row: ModelRow, *, fresh: bool) -> int:
    """A new attempt, queued now; `fresh` (a request to profile) starts counting tries over."""
    row.profile_attempt = (row.profile_attempt or 0) + 1
    row.profile_tries = 1 if fresh else (row.profile_tries or 0) + 1
    row.profile_worker = None
    row.profile_since = utcnow()
    return row.profile_attempt


def check_attempt(row: ModelRow, attempt: int | None) -> None:
    """A report of another attempt than the current one is stale: 409 (None: a caller without one)."""
    if attempt is not None and attempt != row.profile_attempt:
        raise Conflict(
            f"attempt {attempt} of model {row.name!r} is stale: attempt {row.profile_attempt} is current",
            model=row.name,
            attempt=row.profile_attempt,
        )


def claim(session: Session, model_id: int, *, attempt: int, hardware: str, worker: str | None) -> None:
    """`worker` takes `attempt` on `hardware`; no worker: the attempt is handed to that hardware's queue."""
    row = repo.model_by_id(session, model_id)
    if row is None:
        raise NotFound(f"no model {model_id}")
    check_attempt(row, attempt)
    if row.status not in PROFILING:
        raise Conflict(
            f"attempt {attempt} of model {row.name!r} is over: the model is {row.status}", model=row.name
        )
    row.profile_worker = worker
    row.profile_since = utcnow()
    session.commit()
    if worker:
        log.info("profiler %s claimed model %s (attempt %s) on %s", worker, row.name, attempt, hardware)
    else:
        log.info("model %s (attempt %s) handed to the %s profilers' queue", row.name, attempt, hardware)


def holders(r: redis.Redis, row: ModelRow) -> list[ProfileLease]:
    """The live leases of the model's current attempt (older attempts' leases are over)."""
    return [lease for lease in leases_of(r, row.id, KINDS) if lease.attempt == row.profile_attempt]


def reprofile(
    session: Session,
    r: redis.Redis,
    queue: ProfileQueue,
    row: ModelRow,
) -> str:
    """Profile a model again; a model in profiling only when no profiler holds its lease (else 409).
    Returns what was done."""
    previous = (row.status, row.status_reason)
    if row.status in PROFILING:
        live = holders(r, row)
        if live:
            lease = live[0]
            since = datetime.fromtimestamp(lease.since, UTC).isoformat(timespec="seconds")
            raise Conflict(
                f"model {row.name!r} is being profiled by {lease.worker} on {lease.hardware} since {since} "
                f"(attempt {lease.attempt})",
                status=row.status,
                worker=lease.worker,
                since=since,
                attempt=lease.attempt,
            )
        who = f"claimed by {row.profile_worker}" if row.profile_worker else "queued"
        done = (
            f"no profiler holds the lease of model {row.name} (attempt {row.profile_attempt}, {who}); "
            f"profiling again as attempt {row.profile_attempt + 1}"
        )
    else:
        done = f"profiling model {row.name} again as attempt {row.profile_attempt + 1}"
    attempt = start_attempt(row, fresh=True)
    row.status = "profiling"
    row.status_reason = done if previous[0] in PROFILING else None
    # Committed before the task is sent: a profiler taking it at once must find this attempt current.
    session.commit()
    try:
        queue.enqueue(row.id, "cpu", attempt)
    except Exception as exc:  # broker down: the model is as it was, so the caller can retry
        row.status, row.status_reason = previous
        session.commit()
        raise Unavailable("profiling could not be queued", reason=type(exc).__name__) from exc
    if previous[0] in PROFILING:
        log.warning("%s", done)
        session.add(
            event_row(kind="profiler", action="reprofile", outcome="done", reason=done, model=row.name)
        )
        session.commit()
    return done


def requeue(session: Session, queue: ProfileQueue, row: ModelRow, *, attempt: int, reason: str) -> int | None:
    """Profile again as a new attempt, if `attempt` is still current (another registry replica's sweeper
    may have acted first: the conditional update lets one of them win). Returns the new attempt."""
    changed = _rowcount(
        session,
        update(ModelRow)
        .where(ModelRow.id == row.id, ModelRow.profile_attempt == attempt, ModelRow.status.in_(PROFILING))
        .values(
            profile_attempt=attempt + 1,
            profile_tries=ModelRow.profile_tries + 1,
            profile_worker=None,
            profile_since=utcnow(),
            status="profiling",
            status_reason=reason,
        ),
    )
    session.commit()
    if not changed:
        return None
    queue.enqueue(row.id, "cpu", attempt + 1)
    return attempt + 1


def give_up(session: Session, row: ModelRow, *, attempt: int, reason: str) -> bool:
    """Set the model `failed` with `reason`, if `attempt` is still current."""
    changed = _rowcount(
        session,
        update(ModelRow)
        .where(ModelRow.id == row.id, ModelRow.profile_attempt == attempt, ModelRow.status.in_(PROFILING))
        .values(status="failed", status_reason=reason[:500], profile_worker=None, profile_since=utcnow()),
    )
    session.commit()
    return bool(changed)


def _rowcount(session: Session, statement: Update) -> int:
    result = session.execute(statement)  # the session's own copy of the row is updated too
    return int(cast(CursorResult[Any], result).rowcount or 0)
