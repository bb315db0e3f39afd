"""Settings every service reads: where state lives, how to reach the stores and each other, the keys."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from infaas.core.costs import PriceTable


class CommonSettings(BaseSettings):
    """Fields every service reads; the base of every per-service settings class."""

    model_config = SettingsConfigDict(env_prefix="INFAAS_", extra="ignore", use_attribute_docstrings=True)

    var_dir: Path = Path("var")
    """Where local state lives: SQLite database, artifacts, embedded Redis, cached demo models."""

    database_url: str = ""
    """SQLAlchemy URL of the metadata database; empty means SQLite at `<var_dir>/infaas.db`."""

    redis_url: str = ""
    """Redis URL of the metadata store, query streams and Celery broker. Empty is only valid for the
    launcher, which then starts an embedded Redis server and hands its URL to every process."""

    artifact_dir: Path | None = None
    """Model repository directory (content addressed); default `<var_dir>/artifacts`."""

    artifact_source: Literal["local", "registry"] = "local"
    """Where executors, profilers and job workers get artifacts. `local`: `artifact_dir` is the model
    repository itself (one machine, or a volume shared with the registry). `registry`: `artifact_dir` is
    this machine's cache, filled by digest from the registry and verified (no shared volume). The
    registry always keeps the repository in its own `artifact_dir`."""

    admin_key: str = ""
    """Admin API key. Empty: the launcher generates one on first start and keeps it in `<var_dir>`."""

    internal_key: str = ""
    """Shared secret of the suite's own services: every internal request carries it (`x-infaas-internal`),
    and push connections open with it. Empty: `infaas run` generates one on first start and keeps it in
    `<var_dir>`; a service started with none refuses every internal request."""

    host: str = "127.0.0.1"
    """Bind address of internal services (loopback by default: only the gateway is public)."""

    gateway_port: int = 8080
    """Port of the gateway, the single public one."""

    registry_port: int = 8081
    """Port of the registry's internal API."""

    scheduler_port: int = 8082
    """Port of the scheduler service (`scheduler_mode = "remote"`)."""

    executor_port: int = 8083
    """Port of an executor's HTTP API (the first one's, under `infaas run`: `executor_ports`)."""

    planner_port: int = 8084
    """Port of the planner's HTTP API (and of its pulse socket, where that UDP port is free)."""

    profiler_metrics_port: int = 8085
    """Port a profiler worker serves its Prometheus metrics on (it has no other HTTP API)."""

    registry_url: str = ""
    """Base URL of the registry; default `http://127.0.0.1:<registry_port>`."""

    scheduler_url: str = ""
    """Base URL of the scheduler; default `http://127.0.0.1:<scheduler_port>`."""

    planner_url: str = ""
    """Base URL of the planner; default `http://127.0.0.1:<planner_port>`."""

    executor_advertise_url: str = ""
    """URL other services use to reach this executor; default `http://127.0.0.1:<executor_port>`."""

    heartbeat_ttl_s: float = Field(default=5.0, gt=0)
    """A worker whose heartbeat is older than this is considered gone."""

    log_level: str = "info"
    """Log level of every process (`debug`, `info`, `warning`, …); logs are JSON lines."""

    price_cpu_vcpu_hour: float = 0.048
    """$ per vCPU-hour (default: AWS m5.large on-demand, us-east-1)."""

    price_gpu_hour: float = 0.526
    """$ per GPU-hour (default: AWS g4dn.xlarge, one T4, on-demand, us-east-1)."""

    price_neuron_core_hour: float = 0.057
    """$ per NeuronCore-hour (default: AWS inf1.xlarge $0.228/h over 4 NeuronCores)."""

    @field_validator("database_url")
    @classmethod
    def _normalize_dsn(cls, value: str) -> str:
        # Bare postgres:// URLs would pick psycopg2, which we do not ship.
        for prefix in ("postgres://", "postgresql://"):
            if value.startswith(prefix):
                return "postgresql+psycopg://" + value[len(prefix) :]
        return value

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.var_dir / 'infaas.db').resolve()}"

    @property
    def prices(self) -> PriceTable:
        return PriceTable(
            cpu_vcpu_hour=self.price_cpu_vcpu_hour,
            gpu_hour=self.price_gpu_hour,
            neuron_core_hour=self.price_neuron_core_hour,
        )

    @property
    def resolved_artifact_dir(self) -> Path:
        return (self.artifact_dir or self.var_dir / "artifacts").resolve()

    def service_url(self, service: str) -> str:
        """Base URL of an internal service, explicit setting first."""
        explicit = {
            "registry": self.registry_url,
            "scheduler": self.scheduler_url,
            "planner": self.planner_url,
            "executor": self.executor_advertise_url,
        }.get(service, "")
        if explicit:
            return explicit.rstrip("/")
        return f"http://127.0.0.1:{self.port(service)}"

    def port(self, service: str) -> int:
        ports = {
            "gateway": self.gateway_port,
            "registry": self.registry_port,
            "scheduler": self.scheduler_port,
            "executor": self.executor_port,
            "planner": self.planner_port,
            "profiler": self.profiler_metrics_port,
        }
        return ports[service]

    def require_redis(self) -> str:
        if not self.redis_url:
            raise RuntimeError(
                "INFAAS_REDIS_URL is not set: start services with `infaas run`, which provides an embedded "
                "Redis, or point them at a Redis server"
            )
        return self.redis_url
