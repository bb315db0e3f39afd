"""The profiler's Celery worker (`infaas serve profiler --queue profile.cpu`).

Tasks are thin wrappers over `service.profile_model`. The worker runs tasks in its main process, one at
a time (solo pool): concurrent profiling on the same cores would corrupt the measurements, and it lets
the worker serve `/metrics` for what it did.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from celery import Celery
from celery.signals import worker_ready
from prometheus_client import Counter, Histogram, start_http_server

from infaas.artifacts import LocalArtifactStore
from infaas.clients.registry import RegistryClient
from infaas.config import Settings
from infaas.hardware import detect_hardware
from infaas.schemas import StatusUpdate
from infaas.tasks import PROFILE_MODEL, make_celery, profile_queue
from services.profiler import service

log = logging.getLogger("infaas.profiler")

PROFILED = Counter("infaas_profiler_models_total", "Models profiled, by outcome", ["outcome"])
PROFILE_SECONDS = Histogram(
    "infaas_profiler_model_duration_seconds",
    "Time to profile one model",
    buckets=(1, 2, 5, 10, 20, 40, 80, 160, 320),
)


def create_worker_app(settings: Settings) -> Celery:
    celery = make_celery(settings.require_redis())

    @celery.task(name=PROFILE_MODEL, max_retries=0)  # type: ignore[untyped-decorator]
    def profile_model_task(model_id: int) -> int:
        registry = RegistryClient(settings.service_url("registry"))
        start = time.perf_counter()
        try:
            reports = service.profile_model(
                model_id,
                registry=registry,
                artifacts=LocalArtifactStore(settings.resolved_artifact_dir),
                settings=settings,
            )
            ready = sum(r.status == "ready" for r in reports)
            PROFILED.labels("ready" if ready else "failed").inc()
            return ready
        except Exception as exc:
            PROFILED.labels("error").inc()
            log.exception("profiling model %s failed", model_id)
            try:
                registry.set_status(model_id, StatusUpdate(status="failed", reason=str(exc)[:300]))
            except Exception:
                log.exception("could not report the failure of model %s", model_id)
            raise
        finally:
            PROFILE_SECONDS.observe(time.perf_counter() - start)
            registry.close()

    def serve_metrics(**_kwargs: Any) -> None:
        start_http_server(settings.profiler_metrics_port, addr=settings.host)

    worker_ready.connect(serve_metrics, weak=False)
    return celery


def queues_for_this_machine(requested: list[str] | None) -> list[str]:
    """Queues of hardware this machine really has; asking for other queues is refused."""
    have = {profile_queue(kind) for kind in detect_hardware().available}
    if not requested:
        return sorted(have)
    missing = [q for q in requested if q not in have]
    if missing:
        raise SystemExit(f"this machine has no hardware for {', '.join(missing)} (it has {sorted(have)})")
    return requested


def run_worker(settings: Settings, queues: list[str] | None) -> None:
    celery = create_worker_app(settings)
    chosen = queues_for_this_machine(queues)
    celery.worker_main(
        [
            "worker",
            "--pool",
            "solo",
            "--concurrency",
            "1",
            "-Q",
            ",".join(chosen),
            "--loglevel",
            settings.log_level.upper(),
            "--without-gossip",
            "--without-mingle",
            "--hostname",
            f"profiler-{'+'.join(chosen)}@%h",
        ]
    )
