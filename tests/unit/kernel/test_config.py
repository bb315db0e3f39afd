"""Settings: DSN normalization, derived paths and service URLs, independent of the real environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from infaas.core.config import SERVICES, Settings


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("postgres://u:p@db:5432/infaas", "postgresql+psycopg://u:p@db:5432/infaas"),
        ("postgresql://u:p@db:5432/infaas", "postgresql+psycopg://u:p@db:5432/infaas"),
        ("postgresql+psycopg://u@db/infaas", "postgresql+psycopg://u@db/infaas"),
        ("postgresql+asyncpg://u@db/infaas", "postgresql+asyncpg://u@db/infaas"),
        ("sqlite:////tmp/x.db", "sqlite:////tmp/x.db"),
        ("", ""),
    ],
)
def test_dsn_normalization(given: str, expected: str) -> None:
    assert Settings(database_url=given).database_url == expected


def test_dsn_normalization_applies_to_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INFAAS_DATABASE_URL", "postgres://db/infaas")
    assert Settings().database_url == "postgresql+psycopg://db/infaas"


def test_resolved_database_url_defaults_to_sqlite_under_var_dir(tmp_path: Path) -> None:
    s = Settings(var_dir=tmp_path / "state")
    assert s.resolved_database_url == f"sqlite:///{(tmp_path / 'state').resolve()}/infaas.db"


def test_resolved_database_url_is_absolute_for_a_relative_var_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    s = Settings(var_dir=Path("var"))
    assert s.resolved_database_url == f"sqlite:///{tmp_path.resolve()}/var/infaas.db"


def test_resolved_database_url_explicit() -> None:
    s = Settings(database_url="postgresql://db/x")
    assert s.resolved_database_url == "postgresql+psycopg://db/x"


def test_resolved_artifact_dir(tmp_path: Path) -> None:
    assert Settings(var_dir=tmp_path).resolved_artifact_dir == (tmp_path / "artifacts").resolve()
    explicit = tmp_path / "elsewhere"
    assert Settings(var_dir=tmp_path, artifact_dir=explicit).resolved_artifact_dir == explicit.resolve()


@pytest.mark.parametrize(
    ("service", "url"),
    [
        ("gateway", "http://127.0.0.1:8080"),
        ("registry", "http://127.0.0.1:8081"),
        ("scheduler", "http://127.0.0.1:8082"),
        ("executor", "http://127.0.0.1:8083"),
        ("planner", "http://127.0.0.1:8084"),
        ("profiler", "http://127.0.0.1:8085"),
    ],
)
def test_service_url_defaults_to_loopback_and_port(service: str, url: str) -> None:
    assert Settings().service_url(service) == url


def test_service_url_follows_port_settings() -> None:
    assert Settings(registry_port=9001).service_url("registry") == "http://127.0.0.1:9001"


@pytest.mark.parametrize(
    ("field", "service"),
    [
        ("registry_url", "registry"),
        ("scheduler_url", "scheduler"),
        ("planner_url", "planner"),
        ("executor_advertise_url", "executor"),
    ],
)
def test_service_url_explicit_wins_and_loses_trailing_slash(field: str, service: str) -> None:
    s = Settings(**{field: "http://host.internal:9999/"})
    assert s.service_url(service) == "http://host.internal:9999"


def test_service_url_of_unknown_service() -> None:
    with pytest.raises(KeyError):
        Settings().service_url("nope")


def test_every_service_has_a_port() -> None:
    ports = [Settings().port(s) for s in SERVICES]
    assert len(set(ports)) == len(SERVICES)


def test_require_redis() -> None:
    with pytest.raises(RuntimeError, match="INFAAS_REDIS_URL"):
        Settings().require_redis()
    assert Settings(redis_url="redis://localhost:6379/0").require_redis() == "redis://localhost:6379/0"


def test_environment_is_read_with_the_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INFAAS_GATEWAY_PORT", "9090")
    monkeypatch.setenv("INFAAS_PROFILE_BATCH_SIZES", "[2, 8]")
    s = Settings()
    assert s.gateway_port == 9090
    assert s.profile_batch_sizes == [2, 8]


def test_child_env_carries_the_resolved_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = Settings(var_dir=tmp_path, redis_url="redis://r:1/0", admin_key="k")
    env = s.child_env()
    assert env["INFAAS_VAR_DIR"] == str(tmp_path.resolve())
    assert env["INFAAS_DATABASE_URL"] == f"sqlite:///{tmp_path.resolve()}/infaas.db"
    assert env["INFAAS_REDIS_URL"] == "redis://r:1/0"
    assert env["INFAAS_ARTIFACT_DIR"] == str((tmp_path / "artifacts").resolve())
    assert env["INFAAS_ADMIN_KEY"] == "k"
    assert "INFAAS_REDIS_URL" not in os.environ  # the parent's own environment is untouched
    # A child process reading that environment resolves to the same places.
    for name, value in env.items():
        if name.startswith("INFAAS_"):
            monkeypatch.setenv(name, value)
    child = Settings()
    assert child.resolved_database_url == s.resolved_database_url
    assert child.resolved_artifact_dir == s.resolved_artifact_dir
    assert child.require_redis() == "redis://r:1/0"
    assert child.admin_key == "k"


@pytest.mark.parametrize(
    "field",
    [
        "autoscale_interval_s",  # run_every(0, …) spun the planner at ~0.8 cores and Redis at ~0.13
        "worker_autoscale_interval_s",
        "heartbeat_interval_s",
        "job_tick_s",
        "job_idle_tick_s",
        "query_timeout_s",
    ],
)
def test_an_interval_without_an_off_value_refuses_zero(field: str) -> None:
    with pytest.raises(ValidationError, match=field):
        Settings(**{field: 0})
    assert getattr(Settings(**{field: 0.25}), field) == 0.25


@pytest.mark.parametrize("field", ["pulse_interval_s", "failover_interval_s", "pipeline_tune_interval_s"])
def test_zero_turns_off_what_documents_it(field: str) -> None:
    assert getattr(Settings(**{field: 0}), field) == 0
    with pytest.raises(ValidationError, match=field):
        Settings(**{field: -1})


def test_the_cli_names_a_bad_setting_as_it_is_set_and_starts_nothing() -> None:
    env = {**os.environ, "INFAAS_AUTOSCALE_INTERVAL_S": "0", "INFAAS_PULSE_MISSES": "0"}
    done = subprocess.run(
        [sys.executable, "-m", "infaas_cli.main", "serve", "planner"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert "invalid setting INFAAS_AUTOSCALE_INTERVAL_S='0': Input should be greater than 0" in lines
    assert any(line.startswith("invalid setting INFAAS_PULSE_MISSES='0'") for line in lines)
    assert "Traceback" not in done.stderr
