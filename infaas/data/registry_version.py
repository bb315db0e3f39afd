"""The registry's version: a random token in Redis that changes with every commit that changes what the
gateway caches from the registry (API keys, apps, models, pipelines).

The gateway keeps those for `auth_cache_ttl_s` and refreshes the ones in use in the background
(`gateway/ttl_cache.py`). A registry request is an HTTP call, a thread, SQL and a response model:
3–10 ms of CPU on the cores that serve queries, three entries every five seconds per app in use, which
at `tiny`'s low rate made its p99.9 (docs/benchmarks.md, "What the comparison settled"). So a
refresh first reads this token
(one Redis GET): the same token as before the entry's load means the registry committed nothing since
that could change it, and the entry is renewed without asking the registry.

Why a random token and not a counter: Redis may come back empty, and a counter started again could
reach the value a gateway remembers from before. The registry writes a new token after every commit
that touched a tracked table (SQLAlchemy session events, so a new write path cannot forget it), writes
one at start-up (a registry that died between a commit and its token leaves nothing stale), retries a
write that failed, and puts one back when Redis has none. Without a token (Redis away or empty) every
refresh asks the registry, as before.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar

import redis
import redis.asyncio as aioredis
from sqlalchemy import event
from sqlalchemy.orm import ORMExecuteState, Session, sessionmaker

log = logging.getLogger("infaas.registry")

REGISTRY_VERSION = "infaas:registry-version"
TRACKED_TABLES = frozenset({"apps", "api_keys", "models", "pipelines"})
_CHANGED = "infaas-registry-changed"


class VersionWriter:
    """The registry's side: writes a new token; one that could not be written is retried by `ensure`."""

    def __init__(self, r: redis.Redis) -> None:
        self.redis = r
        self.pending = False

    def bump(self) -> bool:
        try:
            self.redis.set(REGISTRY_VERSION, uuid.uuid4().hex)
        except (redis.RedisError, OSError) as exc:
            # Until it is written the gateways may renew entries under the old token: retried each check.
            self.pending = True
            log.warning("writing the registry version failed (retried): %s", exc)
            return False
        self.pending = False
        return True

    def ensure(self) -> None:
        """A periodic check: retry a token that failed to be written, or put one in a Redis without."""
        if self.pending:
            self.bump()
            return
        self.redis.set(REGISTRY_VERSION, uuid.uuid4().hex, nx=True)


def track_changes(sessions: sessionmaker[Session], writer: VersionWriter) -> None:
    """A new token after each commit of `sessions` that wrote to a tracked table: objects flushed, or
    an ORM bulk UPDATE or DELETE statement on one."""

    def flushed(session: Session, _context: Any) -> None:
        for obj in (*session.new, *session.dirty, *session.deleted):
            if getattr(obj, "__tablename__", None) in TRACKED_TABLES:
                session.info[_CHANGED] = True
                return

    def executed(state: ORMExecuteState) -> None:
        if state.is_update or state.is_delete:
            table = getattr(state.statement, "table", None)
            if getattr(table, "name", None) in TRACKED_TABLES:
                state.session.info[_CHANGED] = True

    def committed(session: Session) -> None:
        if session.info.pop(_CHANGED, False):
            writer.bump()

    def rolled_back(session: Session) -> None:
        session.info.pop(_CHANGED, None)

    event.listen(sessions, "after_flush", flushed)
    event.listen(sessions, "do_orm_execute", executed)
    event.listen(sessions, "after_commit", committed)
    event.listen(sessions, "after_rollback", rolled_back)


async def read_version(r: aioredis.Redis, timeout_s: float = 0.25) -> str | None:
    """The gateway's side: the current token, or None (none written, Redis away or slow)."""
    try:
        raw = await asyncio.wait_for(r.get(REGISTRY_VERSION), timeout_s)
    except (redis.RedisError, OSError, TimeoutError):
        return None
    return raw.decode() if isinstance(raw, bytes) else None


T = TypeVar("T")

READ_EVERY_S = 120.0
"""The longest a cache outside the gateway renews an entry on an unchanged token before it reads the
registry again (the gateway's own: `gateway.auth.READ_EVERY_TTLS` TTLs)."""


@dataclass(frozen=True)
class Read(Generic[T]):
    """A value read from the registry, with the version token read just before it."""

    value: T
    token: str | None
    read_at: float
    """When the registry was asked."""
    checked_at: float
    """When it was last found current: read, or renewed on an unchanged token."""


def still_current(
    read_token: str | None, read_at: float, token: str | None, *, now: float, read_every_s: float
) -> bool:
    """Whether a value read from the registry at `read_at`, under `read_token`, may be renewed without a
    read now that the token is `token`: the same known token, and that read younger than
    `read_every_s`. The one rule of every cache of registry reads (the gateway's, the planner's)."""
    return token is not None and token == read_token and now - read_at < read_every_s


async def reread(
    entry: Read[T] | None,
    fetch: Callable[[], Awaitable[T]],
    *,
    token: Callable[[], Awaitable[str | None]] | None,
    now: float,
    read_every_s: float = READ_EVERY_S,
) -> Read[T]:
    """An expired entry of a cache of registry reads (the planner's app settings): renewed as it is
    when the token is the one read before its read and that read is younger than `read_every_s`, else
    read again (`fetch`, whose error the caller handles). Without `token`, or without a token in
    Redis, always read again. The token is read before `fetch`: a commit after the read shows as a new
    token at the next expiry, one before it is in what `fetch` returns."""
    current = await token() if token is not None else None
    if entry is not None and still_current(
        entry.token, entry.read_at, current, now=now, read_every_s=read_every_s
    ):
        return replace(entry, checked_at=now)
    return Read(await fetch(), current, now, now)
