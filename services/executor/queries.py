"""A query as this worker holds it (from the variant's stream or pushed over a connection), and the
frames that answer it or hand it back to its sender."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from infaas.wire.connection import FramedProtocol
from infaas.wire.frames import encode_frame
from services.executor import metrics


@dataclass
class Query:
    entry_id: bytes
    header: dict[str, object]
    inputs: dict[str, np.ndarray]
    rows: int
    conn: FramedProtocol | None = None
    """The push connection to answer on; None: the query came from the variant's stream."""
    answered: bool = False
    """Set when its answer is handed to its push connection (what an unload must not refuse again)."""


Reply = Callable[[Query, bytes], None]
"""Where a query's answer frame goes: its push connection, or a Redis pipeline's PUBLISH."""


def refusal(header: dict[str, object], worker_id: str, reason: str) -> bytes:
    """The answer to a pushed query this worker will not run: the sender re-dispatches it."""
    return encode_frame({"id": header.get("id"), "worker": worker_id, "refused": reason}, {})


def refuse(query: Query, worker_id: str, reason: str) -> None:
    """Hand a pushed query back to its sender, which sends it elsewhere."""
    if query.conn is not None and not query.conn.closed:
        query.conn.send(refusal(query.header, worker_id, reason))


def answer_on_connection(query: Query, frame: bytes) -> None:
    """The `Reply` of a pushed query: its answer goes back on the connection it came on."""
    query.answered = True
    conn = query.conn
    if conn is None or conn.closed:  # the sender went away: nobody is waiting for this answer
        metrics.FAILURES.labels(str(query.header.get("variant")), "sender_gone").inc()
        return
    conn.send(frame)


def answer_at_once(query: Query, frame: bytes) -> None:
    """`answer_on_connection`, written now rather than at the end of the event loop's turn: for an
    answer nothing else is batched with (`services.executor.consumers.serve_now`)."""
    answer_on_connection(query, frame)
    if query.conn is not None and not query.conn.closed:
        query.conn.flush()


def enqueued_at(query: Query, default: float) -> float:
    """When the query was enqueued, by its header; `default` when the header does not say."""
    value = query.header.get("enqueued_at")
    return float(value) if isinstance(value, int | float) else default
