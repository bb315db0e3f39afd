"""The jobs worker (`infaas serve jobs`): a Celery worker on queue `jobs` whose one task runs one chunk
of an offline job (`chunks.run_chunk`), one chunk at a time per process."""

from __future__ import annotations

import logging
import os
import socket

import redis
from celery import Celery

from infaas.clients.executor import OfflineExecutorClient
from infaas.core.config import Settings
from infaas.data.artifacts import LocalArtifactStore
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
        artifacts=LocalArtifactStore(settings.resolved_artifact_dir),
        redis=redis.Redis.from_url(settings.require_redis()),
        name=f"jobs@{socket.gethostname()}:{os.getpid()}",
        heartbeat_ttl_s=settings.heartbeat_ttl_s,
    )

    @celery.task(name=RUN_CHUNK, acks_late=True, max_retries=0)  # type: ignore[untyped-decorator]
    def run_chunk_task(job_id: str, index: int) -> str:
        outcome = run_chunk(ctx, job_id, index)
        log.info("job %s chunk %d: %s", job_id, index, outcome)
        return outcome

    return celery


def run_worker(settings: Settings) -> None:
    """One chunk at a time per process (solo pool): run more processes for more offline throughput."""
    celery = create_jobs_app(settings)
    celery.worker_main(
        [
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
            "--hostname",
            f"jobs@{socket.gethostname()}:{os.getpid()}",
        ]
    )
