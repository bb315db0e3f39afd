"""Settings shared by every service: one `Settings` read from `INFAAS_*` environment variables.

`Settings` composes the per-service classes of `infaas.core.settings` (each field lives in the class
of the service that reads it; see that package's docstring), so every field is `INFAAS_<FIELD>` and is
read as `settings.<field>` whichever class holds it.

Nothing reads the environment at import time; services build their app from `get_settings()` or from a
`Settings` handed to their factory (tests do the latter).
"""

from __future__ import annotations

from functools import lru_cache

from infaas.core.settings.executor import ExecutorSettings
from infaas.core.settings.gateway import GatewaySettings
from infaas.core.settings.jobs import JobsSettings
from infaas.core.settings.planner import PlannerSettings
from infaas.core.settings.profiler import ProfilerSettings
from infaas.core.settings.registry import RegistrySettings
from infaas.core.settings.scheduler import SchedulerSettings
from infaas.core.settings.suite import SuiteSettings

SERVICES: tuple[str, ...] = ("gateway", "registry", "scheduler", "executor", "planner", "profiler")


class Settings(
    SuiteSettings,
    GatewaySettings,
    RegistrySettings,
    ProfilerSettings,
    SchedulerSettings,
    ExecutorSettings,
    PlannerSettings,
    JobsSettings,
):
    """Configuration of an infaas deployment (every field can be set as `INFAAS_<FIELD>`)."""


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """Settings of this process, read once from the environment."""
    return Settings()
