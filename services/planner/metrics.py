"""The planner's Prometheus metrics: the live workers it sees, and the offline-jobs loop's throttle and
chunk dispatch. Labels stay few (the throttle's `paused` is true or false)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

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

_FAILURE_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1, 2.5, 5, 10, 30)
FAILURES_DETECTED = Counter(
    "infaas_failures_detected_total", "Workers declared failed, by who noticed", ["detector"]
)
FAILURES_SUSPECTED = Counter(
    "infaas_failures_suspected_total",
    "Silent workers whose port still accepted connections (a stall, not declared failed)",
)
DETECTION_SECONDS = Histogram(
    "infaas_failure_detection_seconds",
    "From a failed worker's last sign of life to its failure being declared",
    buckets=_FAILURE_BUCKETS,
)
MTTR_SECONDS = Histogram(
    "infaas_failure_mttr_seconds",
    "Per failed worker and model it served: from detection to the first answer from another worker",
    buckets=_FAILURE_BUCKETS,
)
PULSES_REJECTED = Counter(
    "infaas_pulses_rejected_total",
    "Datagrams on the failure watch's pulse port that were refused: unsigned (no valid signature under "
    "the internal key, or malformed) or replayed (a sequence number already heard)",
    ["why"],
)
