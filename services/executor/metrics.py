"""Executor metrics, named after Triton's `nv_inference_*` set (counters in µs, plus histograms)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from infaas.metrics.buffer import BUFFER

_BUCKETS = (0.0001, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.5, 1)

SUCCESS = Counter("infaas_inference_request_success_total", "Queries answered", ["variant"])
FAILURES = Counter(
    "infaas_inference_request_failure_total", "Queries not answered, by reason", ["variant", "reason"]
)
PUSH_REFUSED = Counter(
    "infaas_executor_push_refused_connections_total",
    "Push connections closed before any query: their first frame was not a hello with the internal key",
)
INFERENCES = Counter("infaas_inference_count_total", "Rows inferred (a batch of n counts n)", ["variant"])
EXECUTIONS = Counter("infaas_inference_exec_count_total", "Batches executed", ["variant"])
QUEUE_US = Counter("infaas_inference_queue_duration_us_total", "Cumulative time queries waited", ["variant"])
COMPUTE_US = Counter(
    "infaas_inference_compute_infer_duration_us_total", "Cumulative model run time", ["variant"]
)
BATCH_ROWS = Histogram(
    "infaas_executor_batch_rows",
    "Rows per executed batch",
    ["variant"],
    buckets=(1, 2, 4, 8, 16, 32, 64, 128),
)
COMPUTE_SECONDS = Histogram(
    "infaas_executor_compute_duration_seconds", "Model run time per batch", ["variant"], buckets=_BUCKETS
)
QUEUE_SECONDS = Histogram(
    "infaas_executor_queue_duration_seconds",
    "Time a query waited in its stream",
    ["variant"],
    buckets=_BUCKETS,
)
PENDING = Gauge(
    "infaas_inference_pending_request_count",
    "Queries taken but not yet answered",
    ["variant"],
    multiprocess_mode="livesum",
)
BATCH_LIMIT = Gauge(
    "infaas_executor_batch_limit", "Current AIMD batch limit", ["variant"], multiprocess_mode="livemax"
)
INSTANCE_STATE = Gauge(
    "infaas_instance_state",
    "1 for the state each instance is in",
    ["variant", "state"],
    multiprocess_mode="livemax",
)
LOAD_SECONDS = Histogram(
    "infaas_executor_instance_load_duration_seconds",
    "Instance load time",
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10),
)

STATES = ("loading", "active", "overloaded", "interfered", "failed")


class _PerVariant:
    """One variant's label children of the per-batch and per-query metrics, bound once (`labels()` takes
    a lock and builds a key on every call)."""

    def __init__(self, variant: str) -> None:
        self.inferences = INFERENCES.labels(variant)
        self.executions = EXECUTIONS.labels(variant)
        self.compute_us = COMPUTE_US.labels(variant)
        self.compute_seconds = COMPUTE_SECONDS.labels(variant)
        self.batch_rows = BATCH_ROWS.labels(variant)
        self.queue_us = QUEUE_US.labels(variant)
        self.queue_seconds = QUEUE_SECONDS.labels(variant)
        self.success = SUCCESS.labels(variant)
        self.run_errors = FAILURES.labels(variant, "run_error")


_BOUND: dict[str, _PerVariant] = {}


def _bound(variant: str) -> _PerVariant:
    found = _BOUND.get(variant)
    if found is None:
        found = _BOUND[variant] = _PerVariant(variant)
    return found


def observe_batch(variant: str, rows: int, compute_s: float) -> None:
    """Through `BUFFER` (infaas/metrics/buffer.py): written to the metric files in bulk."""
    m = _bound(variant)
    BUFFER.inc(m.inferences, rows)
    BUFFER.inc(m.executions)
    BUFFER.inc(m.compute_us, compute_s * 1e6)
    BUFFER.observe(m.compute_seconds, compute_s)
    BUFFER.observe(m.batch_rows, rows)


def observe_query(variant: str, queue_s: float, *, ok: bool) -> None:
    m = _bound(variant)
    BUFFER.inc(m.queue_us, queue_s * 1e6)
    BUFFER.observe(m.queue_seconds, queue_s)
    BUFFER.inc(m.success if ok else m.run_errors)


BATCH_DELAY = Gauge(
    "infaas_executor_batch_delay_ms",
    "How long the instance's latest short batch could wait for batch mates (delayed batching)",
    ["variant"],
    multiprocess_mode="livemax",
)


def set_state(variant: str, state: str, pending: int, batch_limit: int, batch_delay_ms: float) -> None:
    for s in STATES:
        INSTANCE_STATE.labels(variant, s).set(1.0 if s == state else 0.0)
    PENDING.labels(variant).set(pending)
    BATCH_LIMIT.labels(variant).set(batch_limit)
    BATCH_DELAY.labels(variant).set(batch_delay_ms)


ORPHANS_CLAIMED = Counter(
    "infaas_orphaned_entries_claimed_total",
    "Stream entries a failed worker left pending, claimed and served by this one",
    ["variant"],
)
