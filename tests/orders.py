"""Orders for tests of the executor and the scheduler's sending (`infaas.wire.messages.Order`)."""

from __future__ import annotations

from infaas.wire.messages import Order


def order(
    qid: str = "q0",
    *,
    variant: str = "v",
    digest: str | None = None,
    reply: str = "",
    sent_at: float = 0.0,
    drop_after: float | None = None,
    slo_ms: float | None = None,
    request_id: str = "r",
) -> Order:
    return Order(qid, variant, digest, reply, sent_at, drop_after, slo_ms, request_id)
