"""The registry's version token (`infaas.data.registry_version`) on real Postgres and Redis: a commit
that changes a table the gateway caches from writes a new token; one that changes only other tables,
or rolls back, does not; a token that could not be written is written by the next check; and the
gateway side reads what the registry side wrote; the registry's every-second check of the publication
and the token finds either one missing."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import redis
import redis.asyncio as aioredis
from sqlalchemy import delete, update
from sqlalchemy.orm import Session, sessionmaker

from infaas.data import store
from infaas.data.db import AppRow, EventRow, make_engine, make_sessionmaker
from infaas.data.registry_version import REGISTRY_VERSION, VersionWriter, read_version, track_changes
from services.registry.variants.republish import present


@pytest.fixture
def sessions(pg_url: str, redis_client: redis.Redis) -> Iterator[sessionmaker[Session]]:
    engine = make_engine(pg_url)
    maker = make_sessionmaker(engine)
    track_changes(maker, VersionWriter(redis_client))
    yield maker
    with maker() as session:
        session.execute(delete(AppRow).where(AppRow.name.like("version-test-%")))
        session.execute(delete(EventRow).where(EventRow.kind == "version-test"))
        session.commit()
    engine.dispose()


def _token(r: redis.Redis) -> bytes | None:
    value = r.get(REGISTRY_VERSION)
    return value if isinstance(value, bytes) else None


def test_a_commit_to_a_cached_table_writes_a_new_token(
    sessions: sessionmaker[Session], redis_client: redis.Redis
) -> None:
    assert _token(redis_client) is None
    name = f"version-test-{uuid.uuid4().hex[:8]}"
    with sessions() as session:
        session.add(AppRow(name=name))
        session.commit()
    first = _token(redis_client)
    assert first is not None
    with sessions() as session:  # an attribute changed on a loaded row
        row = session.query(AppRow).filter_by(name=name).one()
        row.lossy = True
        session.commit()
    second = _token(redis_client)
    assert second not in (None, first)
    with sessions() as session:  # an ORM bulk UPDATE, no object flushed
        session.execute(update(AppRow).where(AppRow.name == name).values(warm_instances=2))
        session.commit()
    assert _token(redis_client) not in (None, first, second)


def test_other_tables_and_rollbacks_leave_the_token(
    sessions: sessionmaker[Session], redis_client: redis.Redis
) -> None:
    redis_client.set(REGISTRY_VERSION, b"before")
    with sessions() as session:
        session.add(EventRow(kind="version-test", action="a", outcome="done", reason="not cached"))
        session.commit()
    with sessions() as session:
        session.add(AppRow(name=f"version-test-{uuid.uuid4().hex[:8]}"))
        session.flush()
        session.rollback()
    with sessions() as session:  # read only
        session.query(AppRow).count()
        session.commit()
    assert _token(redis_client) == b"before"


async def test_a_token_that_failed_is_written_by_the_next_check_and_the_gateway_reads_it(
    redis_url: str, redis_client: redis.Redis
) -> None:
    unreachable = VersionWriter(redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2))
    assert not unreachable.bump() and unreachable.pending
    unreachable.redis = redis_client  # Redis is back
    unreachable.ensure()
    assert not unreachable.pending and _token(redis_client) is not None

    writer = VersionWriter(redis_client)
    redis_client.delete(REGISTRY_VERSION)  # Redis came back empty
    writer.ensure()
    token = _token(redis_client)
    assert token is not None
    writer.ensure()  # one there: kept
    assert _token(redis_client) == token

    client = aioredis.Redis.from_url(redis_url)
    try:
        assert await read_version(client) == token.decode()
        redis_client.delete(REGISTRY_VERSION)
        assert await read_version(client) is None
    finally:
        await client.aclose()
    away = aioredis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2)
    assert await read_version(away) is None


async def test_the_published_check_on_the_loop_finds_what_is_missing(
    redis_url: str, redis_client: redis.Redis
) -> None:
    """`republish.present`: the registry's every-second check, one round trip; anything missing, or a
    Redis that does not answer, sends the loop to the thread that republishes and writes a token."""
    client = aioredis.Redis.from_url(redis_url)
    try:
        redis_client.set(store.PUBLISHED, "p1")
        redis_client.set(REGISTRY_VERSION, "t1")
        assert await present(client, versioned=True)
        redis_client.delete(REGISTRY_VERSION)
        assert not await present(client, versioned=True)
        assert await present(client, versioned=False)
        redis_client.delete(store.PUBLISHED)
        assert not await present(client, versioned=False)
    finally:
        await client.aclose()
    away = aioredis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2)
    assert not await present(away, versioned=True)
