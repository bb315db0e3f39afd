"""The migrations build exactly the schema the ORM declares, on Postgres and on SQLite."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect
from typer.testing import CliRunner

from infaas.core.config import get_settings
from infaas.data.db import Base, make_engine
from infaas_cli.main import app

TABLES = {
    "alembic_version",
    "apps",
    "api_keys",
    "models",
    "variants",
    "workers",
    "jobs",
    "job_chunks",
    "events",
    "pipelines",
    "parity_models",
    "personal_heads",
}


def _drift(url: str) -> list[object]:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"compare_type": True})
            return list(compare_metadata(context, Base.metadata))
    finally:
        engine.dispose()


def test_postgres_schema_matches_the_models(pg_url: str) -> None:
    # pg_url was created by `alembic upgrade head` (tests/integration/conftest.py).
    engine = make_engine(pg_url)
    try:
        assert set(inspect(engine).get_table_names()) == TABLES
    finally:
        engine.dispose()
    assert _drift(pg_url) == []


def test_cli_db_upgrade_creates_the_sqlite_schema(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INFAAS_VAR_DIR", str(tmp_path))
    monkeypatch.delenv("INFAAS_DATABASE_URL", raising=False)
    get_settings.cache_clear()
    try:
        result = CliRunner().invoke(app, ["db", "upgrade"])
        assert result.exit_code == 0, result.output
        url = f"sqlite:///{tmp_path / 'infaas.db'}"
        engine = make_engine(url)
        try:
            assert set(inspect(engine).get_table_names()) == TABLES
        finally:
            engine.dispose()
        assert _drift(url) == []
        # Running it again is a no-op, not an error (the launcher runs it on every start).
        assert CliRunner().invoke(app, ["db", "upgrade"]).exit_code == 0
    finally:
        get_settings.cache_clear()
