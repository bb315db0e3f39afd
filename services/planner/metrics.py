"""The planner's Prometheus metrics: the live workers it sees, and the offline-jobs loop's throttle and
chunk dispatch. Labels stay few (the throttle's `paused` is true or false)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

LIVE_WORKERS = Gauge(
    "infaas_planner_live_workers", "Workers with a fresh heartbeat", multiprocess_mode="livemax"
)
JOBS_PAUSED = Gauge(
    "infaas_planner_jobs_paused", "1 while the throttle pauses offline jobs", multiprocess_mode="livemax"
)
JOBS_ACTIVE = Gauge(
    "infaas_planner_jobs_active", "Offline jobs queued, running or paused", multiprocess_mode="livemax"
)
CHUNKS_IN_FLIGHT = Gauge(
    "infaas_planner_job_chunks_in_flight", "Chunks leased to jobs workers", multiprocess_mode="livemax"
)
CHUNKS_DISPATCHED = Counter(
    "infaas_planner_job_chunks_dispatched_total", "Chunk tasks sent to the jobs queue"
)
THROTTLE_CHANGES = Counter(
    "infaas_planner_throttle_changes_total", "Throttle pause/resume changes", ["paused"]
)
