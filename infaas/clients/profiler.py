"""Celery wiring shared by the task producers (registry) and the profiler workers.

Producers send tasks by name, so the registry never imports the profiler service.
"""

from __future__ import annotations

from celery import Celery

PROFILE_MODEL = "infaas.profile_model"
PROFILE_VARIANTS = "infaas.profile_variants"
PROFILER_TTL_S = 15.0
"""A profiler worker not heard from for this long no longer counts as having its hardware."""


def profile_queue(hardware: str) -> str:
    """One queue per hardware kind: a worker consumes only the queues of hardware it has."""
    return f"profile.{hardware}"


def make_celery(broker_url: str) -> Celery:
    app = Celery("infaas", broker=broker_url)
    app.conf.update(
        task_acks_late=True,  # a worker that dies mid-profile leaves the task for another
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,  # profiling one model at a time keeps measurements honest
        task_ignore_result=True,
        broker_connection_retry_on_startup=True,
        task_serializer="json",
        accept_content=["json"],  # never unpickle what comes over the broker
        broker_transport_options={"visibility_timeout": 3600},
    )
    return app
