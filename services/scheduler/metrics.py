"""Scheduler metrics."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

REQUEST_SECONDS = Histogram(
    "infaas_scheduler_request_duration_seconds",
    "Query time from arrival to answer",
    ["outcome"],
    buckets=(0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
DECISION_SECONDS = Histogram(
    "infaas_scheduler_decision_duration_seconds",
    "get_variant time",
    buckets=(1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 5e-3),
)
DECISIONS = Counter("infaas_scheduler_decisions_total", "Selection outcomes", ["action"])
SLO = Counter("infaas_scheduler_slo_total", "Queries with an SLO, by whether it was met", ["met"])
PENDING = Gauge(
    "infaas_scheduler_pending_requests", "Queries waiting for a worker's answer", multiprocess_mode="livesum"
)
CACHE = Counter("infaas_cache_requests_total", "Prediction cache look-ups", ["result"])
SHED = Counter("infaas_shed_requests_total", "Queries refused to keep queues bounded", ["reason"])
FAILURES = Counter("infaas_scheduler_request_failure_total", "Queries that failed, by reason", ["reason"])
QUEUED_ROWS = Gauge(
    "infaas_scheduler_queued_rows",
    "Rows this scheduler has in flight per variant "
    "(bounded by queue_limit_s of the variant's profiled throughput)",
    ["variant"],
    multiprocess_mode="livesum",
)
ADMISSION = Counter(
    "infaas_scheduler_admission_total",
    "Deadline-aware admission of queries to active instances, by outcome: admitted where chosen, "
    "rerouted to another variant predicted in time, late (run anyway under best_effort), shed (503), "
    "default (the app's default output at once)",
    ["outcome"],
)
REDISPATCHED = Counter(
    "infaas_scheduler_redispatched_total",
    "Queries sent again because their worker refused them or its push connection dropped",
    ["reason"],
)

# Label children of the per-query counters, bound once: `labels()` takes a lock and builds a key on
# every call, which on the query path cost more than the increment itself.
CACHE_HIT, CACHE_MISS = CACHE.labels("hit"), CACHE.labels("miss")
DECIDED = {action: DECISIONS.labels(action) for action in ("active", "load")}
SLO_MET = {True: SLO.labels("true"), False: SLO.labels("false")}
REQUEST_OK = REQUEST_SECONDS.labels("ok")
ADMITTED = {o: ADMISSION.labels(o) for o in ("admitted", "rerouted", "late", "shed", "default")}
SHED_DEADLINE = SHED.labels("deadline")
TAKEN_BACK = Counter(
    "infaas_scheduler_taken_back_total",
    "Stream entries taken back from a failed worker that no other worker of the variant could claim",
)
PARITY = Counter(
    "infaas_scheduler_parity_total",
    "Queries of models with a parity model (ParM), by what became of them: coded (in a full coding "
    "group with a parity query sent), uncoded (their group did not fill within the bound, or no parity "
    "instance was active), reconstructed (answered by decoding the parity output before their own)",
    ["outcome"],
)
PARITY_QUERIES = Counter(
    "infaas_scheduler_parity_queries_total", "Parity queries sent to parity models, by outcome", ["outcome"]
)
