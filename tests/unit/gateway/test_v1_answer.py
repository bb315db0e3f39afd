"""The scheduler's `Answer` → the `/v1` JSON body, from the object an embedded scheduler returns and from
the frame a scheduler service sends (the same bytes either way)."""

from __future__ import annotations

import numpy as np
import pytest

from gateway.dataplane.routes import v1_json
from infaas.clients.envelope import Answer, Query
from infaas.core.errors import BadRequest
from infaas.policy.selection import Requirements
from infaas.wire.frames import encode_frame

ANSWER = Answer(
    outputs={"probabilities": np.array([[0.25, 0.75]], dtype=np.float32), "label": np.array([[1]])},
    model="m",
    variant="m.v",
    worker="cpu-1",
    hardware="cpu",
    queue_ms=0.5,
    compute_ms=1.25,
    total_ms=2.1234,
    slo_met=None,
    cached=False,
    default=False,
    reason="cheapest active variant meeting the requirements",
    request_id="r1",
)
BODY = (
    b'{"outputs":{"probabilities":[[0.25,0.75]],"label":[[1]]},"model":"m","variant":"m.v",'
    b'"worker":"cpu-1","hardware":"cpu","latency_ms":{"queue":0.5,"compute":1.25,"total":2.1234},'
    b'"slo_met":null,"cached":false,"default":false,'
    b'"reason":"cheapest active variant meeting the requirements","request_id":"r1"}'
)


def test_the_v1_body_of_an_answer_and_of_its_frame() -> None:
    assert v1_json(ANSWER) == BODY
    assert v1_json(Answer.decode(ANSWER.encode())) == BODY  # a scheduler service's answer


def test_a_query_survives_its_frame() -> None:
    x = np.arange(4, dtype=np.float32).reshape(1, 4)
    query = Query("app", "shop", "x:float32:4", Requirements(50.0, 0.9), {"x": x}, "r1", "shop", "default")
    received = Query.decode(query.encode())
    assert received._replace(tensors={}) == query._replace(tensors={})
    np.testing.assert_array_equal(received.tensors["x"], x)


@pytest.mark.parametrize(
    "header",
    [{}, {"kind": "job"}, {"kind": "app", "target": 3}],
    ids=["empty", "unknown-kind", "target-not-text"],
)
def test_a_malformed_query_frame_is_a_bad_request(header: dict[str, object]) -> None:
    with pytest.raises(BadRequest):
        Query.decode(encode_frame(header, {}))


def test_a_text_default_output_is_rendered_not_a_server_error() -> None:
    text = ANSWER._replace(outputs={"label": np.array([["seven"], ["one"]])}, default=True)
    assert v1_json(text).startswith(b'{"outputs":{"label":[["seven"],["one"]]},')
