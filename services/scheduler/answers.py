"""How the dispatcher words an answer: the outputs with what happened (variant, worker, timings, SLO met,
cached, default) and why, or the SLO-miss policy's error. Transports render it (`/v1` JSON, OIP)."""

from __future__ import annotations

import time

import numpy as np

from infaas.clients.envelope import Answer, Query
from infaas.core.errors import DeadlineExceeded, Overloaded
from infaas.metrics.buffer import BUFFER
from infaas.policy.selection import Decision, Requirements
from infaas.policy.slo_miss import RULES
from services.scheduler import metrics
from services.scheduler.admission import Prediction, retry_after_s


def missed(decision: Decision, query: Query, arrived: float) -> Answer:
    """The SLO passed before an answer: the app's policy says what to do (`infaas.policy.slo_miss`:
    the default output, or an error)."""
    waited = round((time.perf_counter() - arrived) * 1000, 3)
    BUFFER.inc(metrics.SLO_MET[False])
    if RULES[query.policy].on_miss == "default_output":
        metrics.FAILURES.labels("slo_default").inc()
        reason = (
            f"the query missed its {query.requirements.slo_ms} ms SLO after {waited} ms: answered "
            "the app's default output (app policy: default)"
        )
        return default_answer(decision, query, arrived, reason)
    metrics.FAILURES.labels("slo_error").inc()
    slo_ms = query.requirements.slo_ms
    raise DeadlineExceeded(
        f"the query missed its {slo_ms} ms SLO (app policy: error)",
        variant=decision.variant.id,
        waited_ms=waited,
        latency_ms=slo_ms,  # the API's name for the SLO the query stated
    )


def shed(decision: Decision, query: Query, arrived: float, prediction: Prediction) -> Answer:
    """Admission found no active variant that would answer in time, and queued work is why: the app's
    `default` policy answers its default output now; otherwise a 503 with Retry-After, now, rather
    than at the SLO (the answer would have been wasted work on an instance others are waiting for)."""
    BUFFER.inc(metrics.SHED_DEADLINE)
    if RULES[query.policy].on_predicted_miss == "default_output":
        BUFFER.inc(metrics.ADMITTED["default"])
        reason = f"{prediction.why()}: answered the app's default output at once (app policy: default)"
        return default_answer(decision, query, arrived, reason)
    BUFFER.inc(metrics.ADMITTED["shed"])
    raise Overloaded(
        f"shed at once: {prediction.why()}", retry_after_s=retry_after_s(prediction), **prediction.details()
    )


def answer(
    decision: Decision,
    outputs: dict[str, np.ndarray],
    request_id: str,
    arrived: float,
    req: Requirements,
    *,
    queue_ms: float,
    compute_ms: float,
    worker: str,
    cached: bool,
    reason: str,
    default: bool = False,
) -> Answer:
    total_ms = (time.perf_counter() - arrived) * 1000
    slo_met = None if req.slo_ms is None else (total_ms <= req.slo_ms and not default)
    if slo_met is not None and not default:
        BUFFER.inc(metrics.SLO_MET[slo_met])
    variant = decision.variant
    return Answer(
        outputs,
        variant.model,
        variant.id,
        worker,
        variant.hardware,
        queue_ms,
        compute_ms,
        round(total_ms, 4),
        slo_met,
        cached,
        default,
        reason,
        request_id,
    )


def default_answer(decision: Decision, query: Query, arrived: float, reason: str) -> Answer:
    row = query.default_output or {}
    outputs = {name: np.repeat(np.asarray([value]), query.rows, axis=0) for name, value in row.items()}
    return answer(
        decision,
        outputs,
        query.request_id,
        arrived,
        query.requirements,  # only its SLO counts: a default answer never meets it
        queue_ms=0.0,
        compute_ms=0.0,
        worker="none",
        cached=False,
        reason=reason,
        default=True,
    )
