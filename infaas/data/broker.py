"""What every Celery app of the suite sets (the profiler's queues and the jobs queue), on Redis as the
broker: the producers (registry, planner) and the workers build their apps from the same settings."""

from __future__ import annotations

from typing import Any

BROKER_WAIT_S = 5.0
"""How long an idle worker's BRPOP blocks before it asks again (kombu's `polling_interval`; a task ends
the wait at once): the 1 s default woke an idle worker, and Redis, every second."""


def celery_settings(*, visibility_timeout_s: float) -> dict[str, Any]:
    """Settings for `Celery.conf.update`; `visibility_timeout_s`: when the broker hands a message nobody
    acknowledged to another worker."""
    return {
        "task_acks_late": True,  # a worker that dies mid-task leaves the message for another
        "task_reject_on_worker_lost": True,
        # One task at a time: a profile measures alone, and a prefetched chunk would sit idle behind
        # the running one.
        "worker_prefetch_multiplier": 1,
        "task_ignore_result": True,
        "broker_connection_retry_on_startup": True,
        "task_serializer": "json",
        "accept_content": ["json"],  # never unpickle what comes over the broker
        "broker_transport_options": {
            "visibility_timeout": visibility_timeout_s,
            "polling_interval": BROKER_WAIT_S,
        },
    }
