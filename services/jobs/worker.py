"""The jobs worker (`infaas serve jobs`): a Celery worker on queue `jobs` whose one task runs one chunk
of an offline job (`chunks.run_chunk`), one chunk at a time per process."""

from __future__ import annotations

import logging
import os
import socket

import redis
from celery import Celery
from celery.signals import setup_logging, worker_ready

from infaas.clients.artifacts import artifact_store
from infaas.clients.executor import OfflineExecutorClient
from infaas.core.config import Settings
from infaas.core.heap import settle_heap
from infaas.core.logs import configure_worker_logging
from infaas.jobs.client import JobsClient
from infaas.jobs.protocol import JOBS_QUEUE, RUN_CHUNK, make_jobs_celery
from services.jobs.chunks import ChunkContext, run_chunk

log = logging.getLogger("infaas.jobs")


def create_jobs_app(settings: Settings) -> Celery:
    celery = make_jobs_celery(
        settings.require_redis(), visibility_timeout_s=max(60.0, 4 * settings.job_chunk_lease_s)
    )
    ctx = ChunkContext(
        jobs=JobsClient(settings.service_url("registry"), internal_key=settings.internal_key),
        executor=OfflineExecutorClient(
            internal_key=settings.internal_key, timeout_s=max(30.0, settings.job_chunk_lease_s)
        ),
        artifacts=artifact_store(settings),
        redis=redis.Redis.from_url(settings.require_redis()),
        name=f"jobs@{socket.gethostname()}:{os.getpid()}",
        heartbeat_ttl_s=settings.heartbeat_ttl_s,
    )

    @celery.task(name=RUN_CHUNK, acks_late=True, max_retries=0)  # type: ignore[untyped-decorator]
    def run_chunk_task(job_id: str, index: int) -> str:
        outcome = run_chunk(ctx, job_id, index)
        log.log(_level(outcome), "job %s chunk %d: %s", job_id, index, outcome, extra={"job": job_id})
        return outcome

    return celery


def _level(outcome: str) -> int:
    """A chunk that failed for good is an error; one handed back after a worker error (it runs again
    later) a warning; done, already done, paused by the throttle or of a finished job is routine."""
    if outcome.startswith("failed"):
        return logging.ERROR
    return logging.WARNING if outcome.startswith("released") else logging.INFO


def run_worker(settings: Settings) -> None:
    """One chunk at a time per process (solo pool): run more processes for more offline throughput.
    Every line it prints is JSON (`infaas.core.logs`): Celery's banner is off (`--quiet`), its logging
    set-up is replaced (`setup_logging` connected) and warnings are logged, not printed."""
    configure_worker_logging("jobs", level=settings.log_level)  # before Celery warns of anything
    celery = create_jobs_app(settings)
    celery.conf.worker_hijack_root_logger = False
    setup_logging.connect(lambda **_: configure_worker_logging("jobs", level=settings.log_level), weak=False)
    worker_ready.connect(lambda **_: settle_heap(), weak=False)
    celery.worker_main(
        [
            "--quiet",
            "worker",
            "--pool",
            "solo",
            "--concurrency",
            "1",
            "-Q",
            JOBS_QUEUE,
            "--loglevel",
            settings.log_level.upper(),
            "--without-gossip",
            "--without-mingle",
            # Nothing reads worker events: their heartbeat would only wake the worker and Redis.
            "--without-heartbeat",
            "--hostname",
            f"jobs@{socket.gethostname()}:{os.getpid()}",
        ]
    )
