"""Integration fixtures: a migrated Postgres database per run, a transaction per test, a clean Redis
database per test."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import redis
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from infaas.core.config import Settings
from infaas.core.credentials import internal_headers
from infaas.data.db import make_engine
from infaas_cli.migrate import upgrade
from services.registry.app import create_app
from services.registry.deps import _session
from tests.conftest import libpq

REDIS_DB = 15  # a database of its own, flushed around every test


@pytest.fixture(scope="session")
def pg_url(pg_admin_url: str) -> Iterator[str]:
    """A fresh database migrated with `alembic upgrade head` (which tests the migrations too)."""
    name = f"infaas_it_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(libpq(pg_admin_url), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = pg_admin_url.rsplit("/", 1)[0] + f"/{name}"
    upgrade(url)
    yield url
    with psycopg.connect(libpq(pg_admin_url), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def db_session(pg_url: str) -> Iterator[Session]:
    """A session inside a transaction that is rolled back after the test, commits included."""
    engine = make_engine(pg_url)
    conn = engine.connect()
    outer = conn.begin()
    session = Session(bind=conn, join_transaction_mode="create_savepoint", expire_on_commit=False)
    try:
        yield session
    finally:
        session.close()
        outer.rollback()
        conn.close()
        engine.dispose()


@pytest.fixture
def redis_url(redis_base_url: str) -> Iterator[str]:
    url = f"{redis_base_url}/{REDIS_DB}"
    client = redis.Redis.from_url(url)
    client.flushdb()
    yield url
    client.flushdb()
    client.close()


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


@pytest.fixture
def settings(pg_url: str, redis_url: str, tmp_path: Path) -> Settings:
    return Settings(
        var_dir=tmp_path,
        database_url=pg_url,
        redis_url=redis_url,
        admin_key="adm_integration_test_key",
        internal_key="int_integration_test_key",
        profile_seconds_per_point=0.02,
        profile_min_iterations=10,
    )


@pytest.fixture
def registry(settings: Settings, db_session: Session) -> Iterator[TestClient]:
    """The registry app in-process on real Postgres and Redis, inside the test's transaction."""
    app = create_app(settings)

    def session_override() -> Iterator[Session]:
        yield db_session

    app.dependency_overrides[_session] = session_override
    # As the gateway calls it: with the internal key (tests of refusals leave it out on purpose).
    with TestClient(app, headers=internal_headers(settings.internal_key)) as client:
        yield client
