"""Shared fixtures: where the real Postgres and Redis are, and the cached demo models."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import psycopg
import pytest
import redis

if TYPE_CHECKING:  # imported where it trains: torch is no import for a test that trains nothing
    from infaas_cli.demo_models import DemoModel

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PG = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
DEFAULT_REDIS = "redis://127.0.0.1:6379"


def _unreachable(what: str, exc: Exception) -> None:
    # CI always has the servers (.ci/run starts them): there, a missing server is a failure.
    if os.environ.get("CI"):
        pytest.fail(f"{what} is not reachable in CI: {exc}")
    pytest.skip(f"{what} is not reachable ({exc}); set INFAAS_TEST_DATABASE_URL / INFAAS_TEST_REDIS_URL")


def libpq(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://")


@pytest.fixture(scope="session")
def pg_admin_url() -> str:
    url = os.environ.get("INFAAS_TEST_DATABASE_URL", DEFAULT_PG)
    try:
        psycopg.connect(libpq(url), connect_timeout=3).close()
    except psycopg.Error as exc:
        _unreachable("Postgres", exc)
    return url


@pytest.fixture(scope="session")
def redis_base_url() -> str:
    url = os.environ.get("INFAAS_TEST_REDIS_URL", DEFAULT_REDIS).rstrip("/")
    try:
        redis.Redis.from_url(url, socket_connect_timeout=3).ping()
    except redis.RedisError as exc:
        _unreachable("Redis", exc)
    return url


@pytest.fixture(scope="session")
def demo_models() -> list[DemoModel]:
    """The three demo models, trained once and cached under ./var like `make run` does (minutes on a
    fresh checkout: integration and end-to-end tests only, tests/unit/conftest.py refuses them)."""
    from infaas_cli.demo_models import build_demo_models

    return build_demo_models(ROOT / "var" / "demo-models")


@pytest.fixture(scope="session")
def small_model(demo_models: list[DemoModel]) -> DemoModel:
    return demo_models[0]
