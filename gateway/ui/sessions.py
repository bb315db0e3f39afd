"""Sessions of the admin UI: a random id in the browser's cookie, the session itself in Redis.

The cookie never holds a key: it holds `secrets.token_urlsafe(32)`, and Redis holds
`infaas:ui:session:<sha256(id)>` → `{"csrf", "created"}` with a TTL of `ui_session_ttl_s`. Only the hash
is stored, so reading Redis gives no cookie that works. Signing out deletes the entry: the same cookie
replayed later finds nothing. Redis restarted empty means signing in again (nothing else is lost).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass

import orjson
import redis.asyncio as aioredis
from redis.exceptions import RedisError

from infaas.core.errors import Unavailable

SESSION_PREFIX = "infaas:ui:session:"
MAX_ID_CHARS = 128
"""Longer than any id we issue (43 characters): anything longer is refused before hashing it."""


def session_key(session_id: str) -> str:
    return SESSION_PREFIX + hashlib.sha256(session_id.encode()).hexdigest()


@dataclass(frozen=True)
class Session:
    """A signed-in admin's session: its id (the cookie's value) and the token its forms must carry."""

    id: str
    csrf: str
    created: float

    def csrf_matches(self, token: str | None) -> bool:
        return token is not None and hmac.compare_digest(token.encode(), self.csrf.encode())


class SessionStore:
    """Create, resolve and revoke UI sessions in Redis. Redis errors are a 503, never a 500."""

    def __init__(self, redis_url: str, *, ttl_s: float) -> None:
        self.redis = aioredis.Redis.from_url(redis_url)
        self.ttl_s = ttl_s

    async def create(self) -> Session:
        session = Session(id=secrets.token_urlsafe(32), csrf=secrets.token_urlsafe(32), created=time.time())
        data = orjson.dumps({"csrf": session.csrf, "created": session.created})
        try:
            # nx: a collision of 256-bit ids never happens, and if it did it must not take over a session
            stored = await self.redis.set(
                session_key(session.id), data, px=max(1, round(self.ttl_s * 1000)), nx=True
            )
        except RedisError as exc:
            raise _unavailable(exc) from exc
        if not stored:
            raise Unavailable("could not start a UI session: try signing in again")
        return session

    async def resolve(self, session_id: str | None) -> Session | None:
        """The live session with this id; None if there is none (unknown, expired or signed out)."""
        if not session_id or len(session_id) > MAX_ID_CHARS:
            return None
        try:
            found = await self.redis.get(session_key(session_id))
        except RedisError as exc:
            raise _unavailable(exc) from exc
        if found is None:
            return None
        data = orjson.loads(found)
        return Session(id=session_id, csrf=str(data["csrf"]), created=float(data["created"]))

    async def revoke(self, session_id: str) -> None:
        try:
            await self.redis.delete(session_key(session_id))
        except RedisError as exc:
            raise _unavailable(exc) from exc

    async def aclose(self) -> None:
        await self.redis.aclose()


def _unavailable(exc: RedisError) -> Unavailable:
    return Unavailable(f"the UI's session store (Redis) is unreachable: {exc}", retry_after_s=1)
