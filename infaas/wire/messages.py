"""The messages between a dispatcher and a worker on the query path: the `Order` that sends a query to a
worker, and the `Reply` that answers it. Both travel as binary frames (`infaas.wire.frames`): the
message is the frame's header, the query's inputs (or the answer's outputs) its tensors.

Each message has one `encode` and one `decode`, and `decode` refuses a malformed frame with a
`BadRequest` naming what is wrong: no side reads the other's header as a dict. Both are `NamedTuple`s,
built at tuple speed once per query (docs/architecture.md, "Vocabulary", names the quantities and their
clocks). The checks are `type(...) is` tests, not `isinstance`: a bool is not a number here, and at the
low rates a core is shared at every call on the path costs (docs/benchmarks.md, "Cold caches").
"""

from __future__ import annotations

import operator
from typing import Any, Literal, NamedTuple

import numpy as np

from infaas.core.errors import BadRequest
from infaas.wire.frames import decode_frame, encode_frame, peek_header


class Order(NamedTuple):
    """A query sent to a worker: the variant (and artifact) to run it on, where its reply goes, and
    its clocks. Times are unix seconds (`time.time()`): the order crosses processes and hosts."""

    id: str
    """The query's id, unique per dispatcher (its reply channel is its own)."""
    variant: str
    digest: str | None
    """The artifact meant: a model registered again under its name reuses its variant ids. None: not
    checked."""
    reply: str
    """The dispatcher's reply channel, for an order read from the variant's stream."""
    sent_at: float
    """When the dispatcher sent it: the worker's `queue_ms` is measured from here."""
    drop_after: float | None
    """After this instant nobody waits for the answer: a worker that picks the order up later answers
    `expired` instead of running it. None: run it however late (the app's policy is `best_effort`)."""
    slo_ms: float | None
    """The query's latency SLO: the batch latency its worker aims for (None: the worker's default)."""
    request_id: str

    def encode(self, inputs: dict[str, np.ndarray]) -> bytes:
        return encode_frame(
            {
                "id": self.id,
                "variant": self.variant,
                "digest": self.digest,
                "reply": self.reply,
                "sent_at": self.sent_at,
                "drop_after": self.drop_after,
                "slo_ms": self.slo_ms,
                "request_id": self.request_id,
            },
            inputs,
        )

    @classmethod
    def decode(cls, frame: bytes | memoryview) -> tuple[Order, dict[str, np.ndarray]]:
        """An order and its inputs from a frame; a malformed one is a `BadRequest`."""
        # Fetched in one C call and checked in two expressions, without the generated __new__'s frame
        # or a helper: this runs once per query on every worker, where each call costs on cold caches.
        h, inputs = decode_frame(frame)
        try:
            order: Order = _new_tuple(cls, _ORDER_FIELDS(h))
        except KeyError as exc:
            raise BadRequest(f"order frame without {exc.args[0]!r}") from exc
        qid, variant, digest, reply, sent_at, drop_after, slo_ms, request_id = order
        if not (
            type(qid) is str
            and type(variant) is str
            and type(reply) is str
            and type(request_id) is str
            and (digest is None or type(digest) is str)
        ):
            raise BadRequest("order frame: id, variant, reply, request_id and digest must be text")
        if not (
            type(sent_at) in _NUMBER
            and (drop_after is None or type(drop_after) in _NUMBER)
            and (slo_ms is None or type(slo_ms) in _NUMBER)
        ):
            raise BadRequest("order frame: sent_at, drop_after and slo_ms must be numbers")
        return order, inputs


_ORDER_FIELDS = operator.itemgetter(*Order._fields)

Outcome = Literal["answered", "expired", "refused", "failed", "invalid"]
"""What became of an order: `answered` (the outputs are the query's), `expired` (picked up after its
`drop_after`: not run), `refused` (this worker will not run it: no such instance, draining, another
artifact — the dispatcher sends it elsewhere), `failed` (the run failed on the worker) or `invalid`
(the model refused the query's values: the caller's to fix)."""


class Reply(NamedTuple):
    """A worker's answer to one order; its outputs travel as the frame's tensors."""

    id: str
    """The order's id (`Order.id`)."""
    worker: str
    outcome: Outcome = "answered"
    variant: str = ""
    queue_ms: float = 0.0
    """From the order's `sent_at` to the worker picking it up."""
    compute_ms: float = 0.0
    """The run of the batch it was in."""
    batch_rows: int = 0
    """Rows of that batch, the order's own included."""
    error: str | None = None
    """Why, for every outcome but `answered`."""

    def encode(self, outputs: dict[str, np.ndarray] | None = None) -> bytes:
        # The outcome is written as it always was on the wire: `refused: <why>`, `expired: true`,
        # `input_error: true` beside `error`, or `error` alone for a failed run.
        if self.outcome == "refused":
            return encode_frame(
                {"id": self.id, "worker": self.worker, "refused": self.error or "refused"}, {}
            )
        head: dict[str, Any] = {
            "id": self.id,
            "worker": self.worker,
            "variant": self.variant,
            "queue_ms": self.queue_ms,
            "compute_ms": self.compute_ms,
            "batch_rows": self.batch_rows,
        }
        if self.outcome != "answered":
            head["error"] = self.error or self.outcome
            if self.outcome == "expired":
                head["expired"] = True
            elif self.outcome == "invalid":
                head["input_error"] = True
        return encode_frame(head, outputs or {})

    @classmethod
    def decode(cls, frame: bytes | memoryview) -> tuple[Reply, dict[str, np.ndarray]]:
        """A reply and its outputs from a frame; a malformed one is a `BadRequest`."""
        h, outputs = decode_frame(frame)
        if "refused" in h:
            qid, worker = h.get("id"), h.get("worker")
            if type(qid) is not str or type(worker) is not str:
                raise BadRequest("reply frame without a text id and worker")
            return cls(qid, worker, "refused", error=str(h["refused"])), outputs
        error = h.get("error")
        try:  # an answer's header has every field (fetched in one C call); a failed run's may lack some
            qid, worker, variant, queue_ms, compute_ms, batch_rows = _REPLY_FIELDS(h)
        except KeyError:
            if error is None:
                raise BadRequest(
                    "reply frame without an id, worker, variant, queue_ms, compute_ms or batch_rows"
                ) from None
            qid, worker, variant, queue_ms, compute_ms, batch_rows = (
                h.get("id"),
                h.get("worker"),
                h.get("variant", ""),
                h.get("queue_ms", 0.0),
                h.get("compute_ms", 0.0),
                h.get("batch_rows", 0),
            )
        # One expression, no helper calls: this runs once per query in every dispatcher.
        if not (
            type(qid) is str
            and type(worker) is str
            and type(variant) is str
            and type(queue_ms) in _NUMBER
            and type(compute_ms) in _NUMBER
            and type(batch_rows) is int
            and (error is None or type(error) is str)
        ):
            raise BadRequest(
                "reply frame: id, worker, variant and error must be text, queue_ms and compute_ms numbers, "
                "batch_rows an integer"
            )
        if error is None:  # without the generated __new__'s frame, as `Order.decode`
            answered: Reply = _new_tuple(
                cls, (qid, worker, "answered", variant, queue_ms, compute_ms, batch_rows, None)
            )
            return answered, outputs
        outcome: Outcome = "expired" if h.get("expired") else "invalid" if h.get("input_error") else "failed"
        return cls(qid, worker, outcome, variant, queue_ms, compute_ms, batch_rows, error), outputs


_REPLY_FIELDS = operator.itemgetter("id", "worker", "variant", "queue_ms", "compute_ms", "batch_rows")
_new_tuple = tuple.__new__
_NUMBER = (float, int)
"""The types a number decodes to (`type(x) in _NUMBER`: a bool is not one)."""


def frame_id(frame: bytes | memoryview) -> str | None:
    """The id in a frame whose message did not decode (to answer or fail that one query), or None
    where not even that can be read."""
    try:
        qid = peek_header(frame).get("id")
    except BadRequest:
        return None
    return qid if type(qid) is str else None
