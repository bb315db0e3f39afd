"""An order as this worker holds it (`Delivery`: read from the variant's stream or pushed over a
connection), and the replies that answer it or hand it back to its sender."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from infaas.wire.connection import FramedProtocol
from infaas.wire.messages import Order, Reply
from services.executor import metrics


@dataclass(slots=True)
class Delivery:
    """One order delivered to this worker, with its inputs and where its reply goes."""

    entry_id: bytes
    order: Order
    inputs: dict[str, np.ndarray]
    rows: int
    conn: FramedProtocol | None = None
    """The push connection to answer on; None: the order came from the variant's stream."""
    answered: bool = False
    """Set when its reply is handed to its push connection (what an unload must not refuse again)."""


ReplyTo = Callable[[Delivery, bytes], None]
"""Where a delivery's reply frame goes: its push connection, or a Redis pipeline's PUBLISH."""


def refusal(order_id: str, worker_id: str, reason: str) -> bytes:
    """The reply to a pushed order this worker will not run: the sender sends it elsewhere."""
    return Reply(order_id, worker_id, "refused", error=reason).encode()


def refuse(delivery: Delivery, worker_id: str, reason: str) -> None:
    """Hand a pushed order back to its sender, which sends it elsewhere."""
    if delivery.conn is not None and not delivery.conn.closed:
        delivery.conn.send(refusal(delivery.order.id, worker_id, reason))


def answer_on_connection(delivery: Delivery, frame: bytes) -> None:
    """The `ReplyTo` of a pushed order: its reply goes back on the connection it came on."""
    delivery.answered = True
    conn = delivery.conn
    if conn is None or conn.closed:  # the sender went away: nobody is waiting for this reply
        metrics.FAILURES.labels(delivery.order.variant, "sender_gone").inc()
        return
    conn.send(frame)


def answer_at_once(delivery: Delivery, frame: bytes) -> None:
    """`answer_on_connection`, written now rather than at the end of the event loop's turn: for a
    reply nothing else is batched with (`services.executor.consumers.serve_now`)."""
    answer_on_connection(delivery, frame)
    if delivery.conn is not None and not delivery.conn.closed:
        delivery.conn.flush()
