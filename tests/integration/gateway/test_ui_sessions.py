"""The admin UI's session store against a real Redis: only hashes are stored, sign-out revokes, the TTL
expires a session, and an unreachable Redis is a 503, not a 500."""

from __future__ import annotations

import hashlib

import pytest
import redis

from gateway.ui.sessions import SESSION_PREFIX, SessionStore
from infaas.core.errors import Unavailable
from tests.polling import async_wait_for


async def test_a_session_is_stored_by_its_ids_hash_and_revoked(
    redis_url: str, redis_client: redis.Redis
) -> None:
    store = SessionStore(redis_url, ttl_s=60)
    try:
        one, two = await store.create(), await store.create()
        assert one.id != two.id and one.csrf != two.csrf and len(one.id) >= 43
        (key,) = redis_client.keys(f"{SESSION_PREFIX}{hashlib.sha256(one.id.encode()).hexdigest()}")
        assert 0 < redis_client.pttl(key) <= 60_000
        assert not any(
            one.id.encode() in k or one.id.encode() in (redis_client.get(k) or b"")
            for k in redis_client.keys()
        )
        assert await store.resolve(one.id) == one
        assert one.csrf_matches(one.csrf) and not one.csrf_matches(two.csrf) and not one.csrf_matches(None)
        await store.revoke(one.id)
        assert await store.resolve(one.id) is None
        assert await store.resolve(two.id) == two  # revoking one session leaves the others
        for unknown in (None, "", "x" * 10_000, one.csrf):
            assert await store.resolve(unknown) is None
    finally:
        await store.aclose()


async def test_a_session_expires_with_its_ttl(redis_url: str) -> None:
    store = SessionStore(redis_url, ttl_s=0.2)
    try:
        session = await store.create()

        async def expired() -> bool:
            return await store.resolve(session.id) is None

        await async_wait_for(expired, what="the session expired", timeout_s=10)
    finally:
        await store.aclose()


async def test_an_unreachable_redis_is_unavailable_not_an_error() -> None:
    # A port nothing listens on (the discard port is never served here).
    store = SessionStore("redis://127.0.0.1:9/0", ttl_s=60)
    try:
        with pytest.raises(Unavailable) as raised:
            await store.resolve("some-session-id")
        assert raised.value.status == 503 and "Redis" in raised.value.message
        with pytest.raises(Unavailable):
            await store.create()
    finally:
        await store.aclose()
