"""Executor metrics (names modelled on Triton's `nv_inference_*`)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

QUERIES = Counter("infaas_executor_queries_total", "Queries answered, by outcome", ["variant", "outcome"])
BATCH_ROWS = Histogram(
    "infaas_executor_batch_rows",
    "Rows per executed batch",
    ["variant"],
    buckets=(1, 2, 4, 8, 16, 32, 64, 128),
)
COMPUTE_SECONDS = Histogram(
    "infaas_executor_compute_duration_seconds",
    "Model run time per batch",
    ["variant"],
    buckets=(0.0001, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.5, 1),
)
QUEUE_SECONDS = Histogram(
    "infaas_executor_queue_duration_seconds",
    "Time a query waited in its variant stream",
    ["variant"],
    buckets=(0.0001, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.5, 1),
)
INSTANCES = Gauge("infaas_executor_instances", "Instances on this worker, by state", ["state"])
LOAD_SECONDS = Histogram(
    "infaas_executor_instance_load_duration_seconds",
    "Instance load time",
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10),
)
