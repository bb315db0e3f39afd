"""A query's fields are declared once (`infaas.clients.envelope.QUERY_FIELDS`): the `/v1` route, the OIP
route's request parameters, the request schemas the OpenAPI document publishes and the generated SDK
all hold exactly them, and the hand-written checks of the hot path accept what the published schema
accepts. Any drift between them fails here."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
import orjson
import pytest
from infaas_client.models import InferenceRequestParameters as SdkOipParameters
from infaas_client.models import InferRequest as SdkInferRequest
from infaas_client.models import InferResponse as SdkInferResponse
from pydantic import ValidationError

from gateway.dataplane.queries import parse_body
from gateway.dataplane.routes import v1_json
from gateway.oip.routes import _stated as oip_stated
from infaas.clients.envelope import (
    OIP_PARAMETERS,
    QUERY_FIELDS,
    V1_FIELDS,
    Answer,
    InferRequest,
    InferResponse,
)
from infaas.core.errors import InvalidInput
from tests.unit.gateway.test_sdk_drift import load_generator

OIP_OWN = {"binary_data_output"}  # the protocol's own parameter beside the query's fields


@pytest.fixture(scope="module")
def schemas() -> dict[str, Any]:
    document = load_generator().openapi_schema()
    found: dict[str, Any] = document["components"]["schemas"]  # type: ignore[index]
    return found


def test_every_list_of_fields_is_the_declared_one(schemas: dict[str, Any]) -> None:
    declared = [f.name for f in QUERY_FIELDS]
    assert len(set(declared)) == len(declared)
    assert V1_FIELDS == set(declared) == set(InferRequest.model_fields)
    assert set(schemas["InferRequest"]["properties"]) == V1_FIELDS
    assert set(schemas["InferenceRequestParameters"]["properties"]) == OIP_PARAMETERS | OIP_OWN
    assert {a.name for a in attrs.fields(SdkInferRequest)} - {"additional_properties"} == V1_FIELDS
    assert {a.name for a in attrs.fields(SdkOipParameters)} - {
        "additional_properties"
    } == OIP_PARAMETERS | OIP_OWN
    assert {"user", "variant", "task"} <= V1_FIELDS and "user" not in OIP_PARAMETERS


def test_the_answer_fields_are_the_published_ones(schemas: dict[str, Any]) -> None:
    published = set(schemas["InferResponse"]["properties"])
    assert (
        published
        == set(InferResponse.model_fields)
        == {a.name for a in attrs.fields(SdkInferResponse)} - {"additional_properties"}
    )
    assert {"selection", "failover", "reconstructed"} <= published
    answer = Answer(
        {"y": np.ones((1, 2), np.float32)},
        "m",
        "m.v",
        "w",
        "cpu",
        0.5,
        1.0,
        2.0,
        True,
        False,
        False,
        "why",
        "r1",
        {"from": "m.a", "reason": "failed"},
        True,
    )
    doc = orjson.loads(v1_json(answer))
    assert set(doc) <= published
    InferResponse.model_validate(doc)


def test_the_v1_route_takes_every_declared_field_and_nothing_else() -> None:
    body = {
        "inputs": [[1.0]],
        "latency_ms": 5,
        "min_accuracy": 0.5,
        "max_cost": 1,
        "variant": "m.v",
        "task": "classification",
        "user": "u1",
    }
    assert set(body) == V1_FIELDS
    data, asked = parse_body(orjson.dumps(body))
    assert (asked.variant, asked.task, asked.user) == ("m.v", "classification", "u1")
    with pytest.raises(InvalidInput) as refused:
        parse_body(orjson.dumps({**body, "priority": 1}))
    assert refused.value.details["allowed"] == sorted(V1_FIELDS)


def test_the_oip_route_takes_the_declared_parameters_and_refuses_the_others() -> None:
    params = {"latency_ms": 5, "min_accuracy": 0.5, "max_cost": 1, "variant": "m.v", "task": "regression"}
    assert set(params) == OIP_PARAMETERS
    asked = oip_stated(params, model_less=False)
    assert (asked.requirements.slo_ms, asked.variant, asked.task) == (5, "m.v", "regression")
    for extra in ({"user": "u1"}, {"priority": 1}):
        with pytest.raises(InvalidInput, match="unknown request parameters"):
            oip_stated({**params, **extra}, model_less=False)


# Each field's values at and past its published bounds, of other types, and absent: the hot path's own
# checks (`queries.stated`) must agree with the published schema (pydantic, strict as JSON is).
CASES: dict[str, list[Any]] = {
    "latency_ms": [0, -1, 1e-9, 20, 86_400_000, 86_400_000.5, "20", True, None],
    "min_accuracy": [-0.01, 0, 0.5, 1, 1.01, "0.5", False, None],
    "max_cost": [-1e-9, 0, 3.5, "1", True, None],
    "variant": ["m.v", 3, ["m.v"], None],
    "task": ["classification", "regression", "ranking", 1, None],
    "user": ["u", "u" * 128, "u" * 129, "", 7, None],
}


def test_every_checked_field_has_cases() -> None:
    assert set(CASES) == V1_FIELDS - {"inputs"}


@pytest.mark.parametrize(("field", "value"), [(f, v) for f, vs in CASES.items() for v in vs])
def test_the_hot_path_checks_agree_with_the_published_schema(field: str, value: Any) -> None:
    body = {"inputs": [[1.0]], field: value}
    try:
        InferRequest.model_validate(body, strict=True)
        published = True
    except ValidationError:
        published = False
    try:
        parse_body(orjson.dumps(body))
        checked = True
    except InvalidInput:
        checked = False
    assert checked == published, f"{field}={value!r}: hot path {'accepts' if checked else 'refuses'} it"
