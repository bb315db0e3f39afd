"""The scheduler's `Answer` → the protocol's answer: requested outputs, JSON or binary each, dtypes
of the answering model, and what the system did in `parameters`."""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson
import pytest
from tritonclient.http import InferResult

from gateway.oip.codec import InferRequestV2, RequestedOutput
from gateway.oip.routes import HEADER_LENGTH, _response
from infaas.clients.envelope import Answer
from infaas.core.errors import BadRequest


def answer(**changes: Any) -> Answer:
    base = Answer(
        outputs={
            "probabilities": np.array([[0.25, 0.75], [1.0, 0.0]], dtype=np.float32),
            "label": np.array([[1], [0]], dtype=np.int64),
        },
        model="m",
        variant="m.v",
        worker="cpu-1",
        hardware="cpu",
        queue_ms=0.5,
        compute_ms=1.25,
        total_ms=2.0,
        slo_met=True,
        cached=False,
        default=False,
        reason="cheapest active variant meeting the requirements",
        request_id="r1",
    )
    return base._replace(**changes)


DTYPES = {"probabilities": "float32", "label": "int64"}


def request(outputs: list[RequestedOutput] | None, *, binary_output: bool = False) -> InferRequestV2:
    return InferRequestV2(id="q", parameters={}, inputs={}, outputs=outputs, binary_output=binary_output)


class _Raw:
    """Just enough of an HTTP response for tritonclient's InferResult to parse our bytes."""

    def __init__(self, body: bytes, headers: dict[str, str]) -> None:
        self.body, self.headers = body, {k.lower(): v for k, v in headers.items()}

    def read(self, length: int = -1) -> bytes:  # a stream: the JSON first, then the binary part
        chunk = self.body if length < 0 else self.body[:length]
        self.body = self.body[len(chunk) :]
        return chunk

    def get(self, name: str, default: str | None = None) -> str | None:
        return self.headers.get(name.lower(), default)


def parse_with_tritonclient(body: bytes, headers: dict[str, str]) -> InferResult:
    raw = _Raw(body, headers)
    return InferResult(raw, verbose=False)


def test_mixed_json_and_binary_outputs_parse_with_tritonclient() -> None:
    wanted = [RequestedOutput("label", False), RequestedOutput("probabilities", True)]
    response = _response("app", request(wanted), answer(), DTYPES)
    length = int(response.headers[HEADER_LENGTH])
    head = orjson.loads(response.body[:length])
    assert [o["name"] for o in head["outputs"]] == ["label", "probabilities"]  # in the requested order
    assert head["outputs"][0] == {"name": "label", "datatype": "INT64", "shape": [2, 1], "data": [1, 0]}
    assert head["outputs"][1]["parameters"] == {"binary_data_size": 2 * 2 * 4}
    assert head["model_name"] == "app" and head["id"] == "q"
    assert head["parameters"] == {
        "model": "m",
        "variant": "m.v",
        "worker": "cpu-1",
        "hardware": "cpu",
        "queue_ms": 0.5,
        "compute_ms": 1.25,
        "total_ms": 2.0,
        "cached": False,
        "default": False,
        "reason": "cheapest active variant meeting the requirements",
        "request_id": "r1",
        "slo_met": True,
    }
    result = parse_with_tritonclient(bytes(response.body), dict(response.headers))
    probabilities = result.as_numpy("probabilities")
    assert probabilities.dtype == np.float32 and probabilities.tolist() == [[0.25, 0.75], [1.0, 0.0]]
    assert result.as_numpy("label").dtype == np.int64


def test_all_outputs_json_by_default_and_binary_on_request() -> None:
    plain = _response("m", request(None), answer(slo_met=None), DTYPES)
    assert HEADER_LENGTH not in plain.headers and plain.media_type == "application/json"
    body = orjson.loads(plain.body)
    assert [o["name"] for o in body["outputs"]] == ["probabilities", "label"]
    assert "slo_met" not in body["parameters"]  # no SLO was set: omitted, never null
    binary = _response("m", request(None, binary_output=True), answer(), DTYPES)
    assert binary.media_type == "application/octet-stream"
    assert all(
        "data" not in o for o in orjson.loads(binary.body[: int(binary.headers[HEADER_LENGTH])])["outputs"]
    )


def test_unknown_outputs_are_400_and_odd_defaults_keep_their_own_type() -> None:
    with pytest.raises(BadRequest, match=r"unknown outputs \['logits'\]"):
        _response("m", request([RequestedOutput("logits", False)]), answer(), DTYPES)
    # An app's default output of another type than the model's (e.g. labels as strings) is answered as is.
    odd_default = {"probabilities": np.asarray([["n/a"]])}  # a default row, as the scheduler repeats it
    odd = _response("m", request(None), answer(outputs=odd_default, default=True), DTYPES)
    out = orjson.loads(odd.body)["outputs"][0]
    assert out["datatype"] == "BYTES" and out["data"] == ["n/a"]
