"""The profiler's Celery worker (`infaas serve profiler --queue profile.cpu`).

Tasks are thin wrappers over `service`. The worker runs tasks in its main process, one at a time
(solo pool): concurrent profiling on the same cores would corrupt the measurements, and it lets the
worker serve `/metrics` for what it did. It announces the hardware queues it serves in Redis, so the
system can tell which hardware kinds have a profiler (and why the others do not).
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import redis
from celery import Celery
from celery.signals import setup_logging, worker_ready, worker_shutting_down
from prometheus_client import Counter, Histogram

from infaas.clients.artifacts import artifact_store
from infaas.clients.profiler import (
    PROFILE_MODEL,
    PROFILE_VARIANTS,
    PROFILER_TTL_S,
    TRAIN_PARITY,
    ProfileLease,
    make_celery,
    profile_queue,
)
from infaas.clients.registry import RegistryClient
from infaas.core.config import Settings
from infaas.core.errors import Conflict, NotFound
from infaas.core.heap import settle_heap
from infaas.core.logs import configure_worker_logging
from infaas.data import store
from infaas.metrics.exposition import collector_registry
from infaas.metrics.keyed_server import start_keyed_metrics_server
from infaas.runtimes.hardware import detect_hardware
from infaas.schemas.api import StatusUpdate, VariantReport
from services.profiler import parity_job, service
from services.profiler.leases import LeaseKeeper

log = logging.getLogger("infaas.profiler")

Work = Callable[[RegistryClient], list[VariantReport]]

PROFILED = Counter("infaas_profiler_models_total", "Models profiled, by outcome", ["outcome"])
PROFILE_SECONDS = Histogram(
    "infaas_profiler_model_duration_seconds",
    "Time to profile one model",
    ["hardware"],
    buckets=(1, 2, 5, 10, 20, 40, 80, 160, 320),
)


def create_worker_app(settings: Settings, name: str = "profiler") -> Celery:
    """The Celery app with the two profiling tasks and the parity training; `name` is this worker's id in
    its leases."""
    celery = make_celery(settings.require_redis())
    r = redis.Redis.from_url(settings.require_redis())

    def live_kinds() -> set[str]:
        profilers = store.live_profilers(r, now=time.time(), ttl_s=PROFILER_TTL_S)
        return {k for p in profilers.values() for k in p["kinds"]}

    run = partial(_run_attempt, r, settings, name)
    artifacts = artifact_store(settings)

    # `attempt` defaults to 0 for tasks sent before attempts existed (models migrated with attempt 0).
    @celery.task(name=PROFILE_MODEL, max_retries=0)  # type: ignore[untyped-decorator]
    def profile_model_task(model_id: int, attempt: int = 0) -> int:
        def dispatch(model_id: int, hardware: str) -> None:
            celery.send_task(
                PROFILE_VARIANTS, args=[model_id, hardware, attempt], queue=profile_queue(hardware)
            )

        return run(
            model_id,
            "cpu",
            attempt,
            lambda registry: service.profile_model(
                model_id,
                registry=registry,
                artifacts=artifacts,
                settings=settings,
                live_kinds=live_kinds,
                dispatch=dispatch,
                attempt=attempt,
            ),
        )

    @celery.task(name=PROFILE_VARIANTS, max_retries=0)  # type: ignore[untyped-decorator]
    def profile_variants_task(model_id: int, hardware: str, attempt: int = 0) -> int:
        return run(
            model_id,
            hardware,
            attempt,
            lambda registry: service.profile_variants(
                model_id, hardware, registry=registry, artifacts=artifacts, settings=settings, attempt=attempt
            ),
        )

    @celery.task(name=TRAIN_PARITY, max_retries=0)  # type: ignore[untyped-decorator]
    def train_parity_task(model_id: int, k: int, generation: int) -> str:
        """Train a model's parity model (ParM); on the solo pool it never runs beside a profile."""
        registry = RegistryClient(settings.service_url("registry"), internal_key=settings.internal_key)
        try:
            return parity_job.train_for_model(
                model_id, k, generation, registry=registry, artifacts=artifacts, settings=settings
            ).state
        except (Conflict, NotFound) as exc:  # superseded, or the model deleted: nothing left to report
            log.info("parity training of model %s dropped: %s", model_id, exc)
            return "dropped"
        finally:
            registry.close()

    return celery


def _run_attempt(
    r: redis.Redis, settings: Settings, name: str, model_id: int, hardware: str, attempt: int, work: Work
) -> int:
    """Lease, claim and profile one attempt; a duplicate, stale or deleted one is dropped, said why.
    Returns the variants made ready."""
    lease = ProfileLease(
        model_id=model_id, hardware=hardware, worker=name, attempt=attempt, since=time.time()
    )
    keeper = LeaseKeeper(r, lease, ttl_s=settings.profile_lease_ttl_s, renew_s=settings.profile_lease_renew_s)
    holder = keeper.take()
    if holder is not None:
        PROFILED.labels("dropped").inc()
        log.info(
            "model %s (attempt %s) is profiled by %s (attempt %s) since %s; this delivery is dropped",
            model_id,
            attempt,
            holder.worker,
            holder.attempt,
            holder.since,
        )
        return 0
    registry = RegistryClient(settings.service_url("registry"), internal_key=settings.internal_key)
    start = time.perf_counter()
    try:
        with keeper:
            registry.claim_profile(model_id, attempt=attempt, hardware=hardware, worker=name)
            reports = work(registry)
        ready = sum(r.status == "ready" for r in reports)
        PROFILED.labels("ready" if ready else "failed").inc()
        return ready
    except Exception as exc:
        outcome = _abandoned(registry, model_id, attempt, exc)
        if outcome:
            PROFILED.labels(outcome).inc()
            return 0
        PROFILED.labels("error").inc()
        log.exception("profiling model %s on %s failed", model_id, hardware)
        try:
            registry.set_status(
                model_id, StatusUpdate(status="failed", reason=str(exc)[:300]), attempt=attempt
            )
        except Exception:
            log.exception("could not report the failure of model %s", model_id)
        raise
    finally:
        PROFILE_SECONDS.labels(hardware).observe(time.perf_counter() - start)
        registry.close()


def _abandoned(registry: RegistryClient, model_id: int, attempt: int, exc: Exception) -> str | None:
    """Why a profile that raised is over without being a failure, said in a log line: the model was
    deleted ("deleted"), or a newer attempt took it ("stale"); None for a real failure."""
    if isinstance(exc, Conflict):
        log.info("model %s: attempt %s dropped: %s", model_id, attempt, exc)
        return "stale"
    if not isinstance(exc, NotFound):
        try:  # a failure halfway (an artifact gone) may be the model deleted under us
            registry.model(model_id)
            return None
        except NotFound:
            pass
        except Exception:  # the registry away: report the failure as one
            return None
    log.info("model %s deleted, profile abandoned (attempt %s)", model_id, attempt)
    return "deleted"


def queues_for_this_machine(requested: list[str] | None) -> list[str]:
    """Queues of hardware this machine really has; asking for other queues is refused."""
    have = {profile_queue(kind) for kind in detect_hardware().available}
    if not requested:
        return sorted(have)
    missing = [q for q in requested if q not in have]
    if missing:
        raise SystemExit(f"this machine has no hardware for {', '.join(missing)} (it has {sorted(have)})")
    return requested


def _announce_forever(settings: Settings, name: str, kinds: list[str], stop: threading.Event) -> None:
    r = redis.Redis.from_url(settings.require_redis())
    unavailable = detect_hardware().unavailable
    while not stop.is_set():
        try:
            store.announce_profiler(
                r, name=name, kinds=kinds, unavailable=unavailable, now=time.time(), ttl_s=PROFILER_TTL_S
            )
        except redis.RedisError as exc:
            log.warning("announcing profiler failed: %s", exc)
        stop.wait(PROFILER_TTL_S / 3)
    r.delete(store.profiler_key(name))
    r.zrem(store.PROFILERS, name)


def run_worker(settings: Settings, queues: list[str] | None) -> None:
    chosen = queues_for_this_machine(queues)
    kinds = [q.removeprefix("profile.") for q in chosen]
    name = f"profiler-{'+'.join(kinds)}@{socket.gethostname()}:{settings.profiler_metrics_port}"
    celery = create_worker_app(settings, name)
    stop = threading.Event()

    def on_ready(**_kwargs: Any) -> None:
        start_keyed_metrics_server(
            settings.profiler_metrics_port,
            addr=settings.host,
            registry=collector_registry(),
            key=settings.internal_key,
        )
        threading.Thread(target=_announce_forever, args=(settings, name, kinds, stop), daemon=True).start()
        settle_heap()

    def on_shutdown(**_kwargs: Any) -> None:
        stop.set()

    def on_setup_logging(**_kwargs: Any) -> None:
        # Connected, this replaces Celery's own set-up: its lines are JSON like every service's.
        configure_worker_logging("profiler", level=settings.log_level)

    on_setup_logging()  # before Celery warns of anything (running as root) or prints its banner
    celery.conf.worker_hijack_root_logger = False
    setup_logging.connect(on_setup_logging, weak=False)
    worker_ready.connect(on_ready, weak=False)
    worker_shutting_down.connect(on_shutdown, weak=False)
    celery.worker_main(
        [
            "--quiet",  # no text banner: every line is JSON
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
            # Nothing reads worker events: their heartbeat would only wake the worker and Redis.
            "--without-heartbeat",
            "--hostname",
            name,
        ]
    )
