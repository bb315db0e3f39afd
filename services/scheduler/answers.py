"""How the dispatcher words an answer: the outputs with what happened (variant, worker, timings, SLO met,
cached, default) and why, or the SLO-miss policy's error."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import orjson

from infaas.core.errors import DeadlineExceeded
from infaas.metrics.buffer import BUFFER
from infaas.policy.selection import Decision, Requirements
from services.scheduler import metrics


def missed(
    decision: Decision,
    header: dict[str, Any],
    rows: int,
    request_id: str,
    arrived: float,
    req: Requirements,
) -> bytes:
    """The SLO passed before an answer: the app's policy says what to do (`error` or `default`)."""
    waited = round((time.perf_counter() - arrived) * 1000, 3)
    BUFFER.inc(metrics.SLO_MET[False])
    if header.get("policy") == "default":
        metrics.FAILURES.labels("slo_default").inc()
        return default_answer(decision, header, rows, request_id, arrived, waited)
    metrics.FAILURES.labels("slo_error").inc()
    raise DeadlineExceeded(
        f"the query missed its {req.latency_ms} ms SLO (app policy: error)",
        variant=decision.variant.id,
        waited_ms=waited,
        latency_ms=req.latency_ms,
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
) -> bytes:
    total_ms = (time.perf_counter() - arrived) * 1000
    slo_met = None if req.latency_ms is None else (total_ms <= req.latency_ms and not default)
    if slo_met is not None and not default:
        BUFFER.inc(metrics.SLO_MET[slo_met])
    return orjson.dumps(
        {
            "outputs": outputs,
            "model": decision.variant.model,
            "variant": decision.variant.id,
            "worker": worker,
            "hardware": decision.variant.hardware,
            "latency_ms": {"queue": queue_ms, "compute": compute_ms, "total": round(total_ms, 4)},
            "slo_met": slo_met,
            "cached": cached,
            "default": default,
            "reason": reason,
            "request_id": request_id,
        },
        option=orjson.OPT_SERIALIZE_NUMPY,
    )


def default_answer(
    decision: Decision,
    header: dict[str, Any],
    rows: int,
    request_id: str,
    arrived: float,
    waited_ms: float,
) -> bytes:
    row = header.get("default_output") or {}
    outputs = {name: np.repeat(np.asarray([value]), rows, axis=0) for name, value in row.items()}
    reason = (
        f"the query missed its {header.get('latency_ms')} ms SLO after {waited_ms} ms: answered "
        "the app's default output (app policy: default)"
    )
    req = Requirements(latency_ms=header.get("latency_ms"))
    return answer(
        decision,
        outputs,
        request_id,
        arrived,
        req,
        queue_ms=0.0,
        compute_ms=0.0,
        worker="none",
        cached=False,
        reason=reason,
        default=True,
    )
