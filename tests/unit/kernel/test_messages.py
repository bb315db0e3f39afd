"""The typed messages between dispatcher and worker (`infaas.wire.messages`): each decodes what it
encodes, refuses a malformed frame with a `BadRequest` naming what is wrong, and writes the reply
outcomes in the keys every worker and dispatcher of the suite read."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from infaas.core.errors import BadRequest
from infaas.wire.frames import decode_frame, encode_frame
from infaas.wire.messages import Order, Outcome, Reply, frame_id
from tests.orders import order


def test_an_order_round_trips_with_its_inputs() -> None:
    sent = order(
        "1f",
        variant="m-v3",
        digest="sha256:ab",
        reply="infaas:reply:x",
        sent_at=1.5e9,
        drop_after=1.5e9 + 0.02,
        slo_ms=20.0,
        request_id="req-1",
    )
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    got, inputs = Order.decode(sent.encode({"x": x}))
    assert got == sent
    np.testing.assert_array_equal(inputs["x"], x)


def test_an_order_without_optional_values_round_trips() -> None:
    sent = order(digest=None, drop_after=None, slo_ms=None, sent_at=3)  # an int time is a number too
    assert Order.decode(sent.encode({}))[0] == sent


def _order_header(**changes: Any) -> dict[str, Any]:
    header = dict(order()._asdict())
    header.update(changes)
    return header


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({"id": 7}, "must be text"),
        ({"variant": None}, "must be text"),
        ({"digest": 3}, "must be text"),
        ({"sent_at": "now"}, "must be numbers"),
        ({"sent_at": True}, "must be numbers"),  # a bool is not a time
        ({"drop_after": [1]}, "must be numbers"),
        ({"slo_ms": "20"}, "must be numbers"),
    ],
)
def test_an_order_with_a_wrong_type_is_refused(changes: dict[str, Any], why: str) -> None:
    with pytest.raises(BadRequest, match=why):
        Order.decode(encode_frame(_order_header(**changes), {}))


@pytest.mark.parametrize(
    "missing", ["id", "variant", "digest", "reply", "sent_at", "drop_after", "slo_ms", "request_id"]
)
def test_an_order_missing_a_field_is_refused_naming_it(missing: str) -> None:
    header = _order_header()
    del header[missing]
    with pytest.raises(BadRequest, match=f"without '{missing}'"):
        Order.decode(encode_frame(header, {}))


@pytest.mark.parametrize(
    ("reply", "wire"),
    [
        (Reply("a", "w1", "answered", "v", 0.5, 1.5, 4), {}),
        (Reply("a", "w1", "expired", "v", 9.0, error="late"), {"expired": True, "error": "late"}),
        (Reply("a", "w1", "failed", "v", 1.0, 2.0, 3, "boom"), {"error": "boom"}),
        (Reply("a", "w1", "invalid", "v", 1.0, 2.0, 3, "index"), {"input_error": True, "error": "index"}),
    ],
)
def test_each_reply_outcome_round_trips_in_the_keys_on_the_wire(reply: Reply, wire: dict[str, Any]) -> None:
    out = np.ones((1, 2), dtype=np.float32)
    frame = reply.encode({"y": out})
    header, outputs = decode_frame(frame)
    assert {k: header[k] for k in wire} == wire
    assert ("input_error" in header) == (reply.outcome == "invalid")
    got, got_outputs = Reply.decode(frame)
    assert got == reply
    np.testing.assert_array_equal(got_outputs["y"], out)


def test_a_refusal_says_why_and_carries_nothing_else() -> None:
    frame = Reply("a", "w1", "refused", error="no instance of v on this worker").encode()
    assert decode_frame(frame) == (
        {"id": "a", "worker": "w1", "refused": "no instance of v on this worker"},
        {},
    )
    assert Reply.decode(frame)[0] == Reply("a", "w1", "refused", error="no instance of v on this worker")


@pytest.mark.parametrize(
    "header",
    [
        {"worker": "w"},  # no id
        {"id": "a"},  # no worker
        {"id": "a", "worker": "w", "queue_ms": "1"},
        {"id": "a", "worker": "w", "batch_rows": 1.5},
        {"id": "a", "worker": "w", "error": 5},
        {"id": "a", "worker": "w", "variant": 1},
    ],
)
def test_a_malformed_reply_is_refused(header: dict[str, Any]) -> None:
    with pytest.raises(BadRequest):
        Reply.decode(encode_frame(header, {}))


def test_every_outcome_is_one_a_reply_can_carry() -> None:
    outcomes: tuple[Outcome, ...] = ("answered", "expired", "refused", "failed", "invalid")
    for outcome in outcomes:
        assert Reply.decode(Reply("a", "w", outcome, error="why").encode())[0].outcome == outcome


def test_the_id_of_an_undecodable_frame_is_read_where_it_can_be() -> None:
    assert frame_id(encode_frame({"id": "q7", "variant": 3}, {})) == "q7"
    assert frame_id(encode_frame({"id": 7}, {})) is None
    assert frame_id(b"\x00\x00\x00\x09not json!") is None
    assert frame_id(b"\x00") is None
