"""The gateway's hot path: JSON body → validated tensors → the scheduler's `Query` (and its frame)."""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson
import pytest

from gateway.dataplane.queries import Stated, from_json, parse_body, requirements, tensors_for
from infaas.clients.envelope import Query
from infaas.core.errors import BadRequest, InvalidInput
from infaas.policy.selection import Requirements
from infaas.schemas.api import AppInternal, ModelInternal
from infaas.wire.tensors import Signature, TensorSpec


def sig_json(*inputs: tuple[str, str, list[int | None]]) -> dict[str, Any]:
    return Signature(
        inputs=tuple(TensorSpec(n, d, tuple(s)) for n, d, s in inputs),
        outputs=(TensorSpec("y", "float32", (None, 3)),),
    ).to_json()


def model(name: str, signature: dict[str, Any], *, status: str = "ready", mid: int = 1) -> ModelInternal:
    return ModelInternal(
        id=mid,
        name=name,
        app="shop",
        format="onnx",
        status=status,  # type: ignore[arg-type]
        artifact_digest="a" * 64,
        validation_digest="b" * 64,
        signature=signature,
    )


def app(
    models: list[ModelInternal], *, latency: float | None = 50.0, accuracy: float | None = 0.9
) -> AppInternal:
    return AppInternal(
        name="shop",
        default_latency_ms=latency,
        default_min_accuracy=accuracy,
        slo_policy="best_effort",
        models=models,
    )


X4 = sig_json(("x", "float32", [None, 4]))
X8 = sig_json(("x", "float32", [None, 8]))
X2 = sig_json(("x", "float32", [None, 2]))
SIG_X4 = Signature.from_json(X4)
TWO_INPUTS = Signature.from_json(sig_json(("a", "float32", [None, 2]), ("b", "int64", [None, 1])))


# --- parse_body ---------------------------------------------------------------------------------------


def test_parse_body_accepts_a_query() -> None:
    body = orjson.dumps({"inputs": [[1, 2, 3, 4]], "latency_ms": 20, "min_accuracy": 0.8})
    assert parse_body(body) == (
        {"inputs": [[1, 2, 3, 4]], "latency_ms": 20, "min_accuracy": 0.8},
        Stated(Requirements(slo_ms=20, min_accuracy=0.8)),
    )


@pytest.mark.parametrize("accuracy", [0, 0.0, 1, 1.0, None])
def test_parse_body_accuracy_bounds_are_inclusive(accuracy: float | None) -> None:
    assert (
        parse_body(orjson.dumps({"inputs": [], "min_accuracy": accuracy}))[1].requirements.min_accuracy
        == accuracy
    )


@pytest.mark.parametrize("body", [b"{not json", b"", b'{"inputs": [1,', b"\xff\xfe"])
def test_parse_body_invalid_json_is_bad_request(body: bytes) -> None:
    with pytest.raises(BadRequest) as info:
        parse_body(body)
    assert info.value.status == 400
    assert type(info.value) is BadRequest


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ([[1, 2, 3, 4]], None),  # not an object
        ("inputs", None),
        (None, None),
        ({"inputs": [], "model": "m"}, None),  # unknown field
        ({"latency_ms": 10}, None),  # missing inputs
        ({"inputs": [], "latency_ms": 0}, "latency_ms"),
        ({"inputs": [], "latency_ms": -5}, "latency_ms"),
        ({"inputs": [], "latency_ms": "10"}, "latency_ms"),
        ({"inputs": [], "latency_ms": True}, "latency_ms"),
        ({"inputs": [], "min_accuracy": 1.01}, "min_accuracy"),
        ({"inputs": [], "min_accuracy": -0.1}, "min_accuracy"),
        ({"inputs": [], "min_accuracy": True}, "min_accuracy"),
        ({"inputs": [], "min_accuracy": "0.9"}, "min_accuracy"),
        ({"inputs": [], "max_cost": -0.01}, "max_cost"),
        ({"inputs": [], "max_cost": "1"}, "max_cost"),
    ],
)
def test_parse_body_refuses_bad_content_with_422(data: Any, field: str | None) -> None:
    with pytest.raises(InvalidInput) as info:
        parse_body(orjson.dumps(data))
    assert info.value.status == 422
    assert info.value.details.get("field") == field


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"latency_ms": float("inf")}, "latency_ms"),
        ({"latency_ms": float("nan")}, "latency_ms"),
        ({"latency_ms": 1e300}, "latency_ms"),  # finite, but no SLO is longer than a day
        ({"latency_ms": 10**400}, "latency_ms"),  # an integer beyond any float
        ({"min_accuracy": float("nan")}, "min_accuracy"),
        ({"max_cost": float("inf")}, "max_cost"),
        ({"max_cost": float("nan")}, "max_cost"),
    ],
)
def test_requirements_refuse_numbers_that_are_not_finite(fields: dict[str, Any], field: str) -> None:
    # orjson refuses 1e999 on /v1, but other parsers (the stdlib's) read it as infinity.
    with pytest.raises(InvalidInput) as info:
        requirements(fields)
    assert info.value.details["field"] == field


def test_parse_body_unknown_fields_lists_the_allowed_ones() -> None:
    with pytest.raises(InvalidInput, match="extra") as info:
        parse_body(orjson.dumps({"inputs": [], "extra": 1}))
    allowed = ["inputs", "latency_ms", "max_cost", "min_accuracy", "task", "user", "variant"]
    assert info.value.details["allowed"] == allowed


def test_a_user_is_refused_outside_a_selection_never_ignored() -> None:
    owner = app([model("clf", X4)], latency=None, accuracy=None)
    with pytest.raises(InvalidInput, match="selection policy") as info:
        app_query(owner, {"inputs": [[1, 2, 3, 4]], "user": "ana"})
    assert info.value.details["field"] == "user"


# --- tensors_for --------------------------------------------------------------------------------------


def test_tensors_for_single_input_list_form() -> None:
    arrays = tensors_for(SIG_X4, [[1, 2, 3, 4], [5, 6, 7, 8]], max_rows=8)
    assert list(arrays) == ["x"]
    assert arrays["x"].dtype == np.float32
    np.testing.assert_array_equal(arrays["x"], [[1, 2, 3, 4], [5, 6, 7, 8]])


def test_tensors_for_single_input_dict_form() -> None:
    arrays = tensors_for(SIG_X4, {"x": [[1, 2, 3, 4]]}, max_rows=8)
    np.testing.assert_array_equal(arrays["x"], [[1, 2, 3, 4]])


def test_tensors_for_several_inputs() -> None:
    arrays = tensors_for(TWO_INPUTS, {"b": [[7], [8]], "a": [[0.5, 1], [2, 3]]}, max_rows=8)
    assert list(arrays) == ["a", "b"]  # in signature order
    assert arrays["a"].dtype == np.float32
    assert arrays["b"].dtype == np.int64
    np.testing.assert_array_equal(arrays["b"], [[7], [8]])


@pytest.mark.parametrize(
    ("raw", "missing", "unexpected"),
    [
        ({"a": [[1, 2]]}, ["b"], []),
        ({"a": [[1, 2]], "b": [[1]], "c": [[1]]}, [], ["c"]),
        ({"x": [[1, 2]]}, ["a", "b"], ["x"]),
    ],
)
def test_tensors_for_dict_names_must_match(
    raw: dict[str, Any], missing: list[str], unexpected: list[str]
) -> None:
    with pytest.raises(InvalidInput) as info:
        tensors_for(TWO_INPUTS, raw, max_rows=8)
    assert info.value.status == 422
    assert info.value.details == {"expected": ["a", "b"], "missing": missing, "unexpected": unexpected}


@pytest.mark.parametrize("dtype", ["float32", "float16", "int64", "uint8"])
def test_tensors_for_refuses_json_booleans_for_numbers(dtype: str) -> None:
    sig = Signature(inputs=(TensorSpec("x", dtype, (None, 2)),), outputs=())
    with pytest.raises(InvalidInput, match="'x'") as info:
        tensors_for(sig, {"x": [[True, False]]}, max_rows=8)
    assert info.value.details["input"] == "x" and info.value.details["got_dtype"] == "bool"


def test_tensors_for_list_form_needs_a_single_input_model() -> None:
    with pytest.raises(InvalidInput) as info:
        tensors_for(TWO_INPUTS, [[1, 2]], max_rows=8)
    assert info.value.details["expected"] == ["a", "b"]


def test_tensors_for_inputs_must_carry_the_same_rows() -> None:
    with pytest.raises(InvalidInput, match="same number of rows"):
        tensors_for(TWO_INPUTS, {"a": [[1, 2], [3, 4]], "b": [[1]]}, max_rows=8)


def test_tensors_for_names_the_failing_input() -> None:
    with pytest.raises(InvalidInput) as info:
        tensors_for(TWO_INPUTS, {"a": [[1, 2]], "b": [[1.5]]}, max_rows=8)
    assert info.value.details["input"] == "b"


def test_tensors_for_enforces_max_rows() -> None:
    with pytest.raises(InvalidInput) as info:
        tensors_for(SIG_X4, [[0, 0, 0, 0]] * 3, max_rows=2)
    assert info.value.details["max_rows"] == 2


# --- from_json: a /v1 body up to the query --------------------------------------------------------------


def model_query(m: ModelInternal, owner: AppInternal, data: dict[str, Any]) -> Query:
    return from_json(owner, m, *parse_body(orjson.dumps(data)), request_id="r1", max_rows=8)


def app_query(owner: AppInternal, data: dict[str, Any]) -> Query:
    return from_json(owner, None, *parse_body(orjson.dumps(data)), request_id="r1", max_rows=8)


def test_model_query_fields_and_arrays_and_its_frame() -> None:
    owner = app([], latency=None, accuracy=None)
    query = model_query(model("clf", X4), owner, {"inputs": [[1, 2, 3, 4]], "latency_ms": 15})
    assert query._replace(tensors={}) == Query(
        kind="model",
        target="clf",
        signature="x:float32:4",
        requirements=Requirements(slo_ms=15, at_reference=True),
        tensors={},
        request_id="r1",
        app="shop",
        policy="best_effort",
        cache=True,
        prefer="cost",
        variant=None,
        default_output=None,
    )
    np.testing.assert_array_equal(query.tensors["x"], np.array([[1, 2, 3, 4]], dtype=np.float32))
    assert query.tensors["x"].dtype == np.float32
    received = Query.decode(query.encode())  # what a scheduler service receives
    assert received._replace(tensors={}) == query._replace(tensors={})
    np.testing.assert_array_equal(received.tensors["x"], query.tensors["x"])


def test_app_query_picks_the_matching_signature_and_applies_defaults() -> None:
    shop = app([model("small", X4, mid=1), model("wide", X8, mid=2)], latency=50.0, accuracy=0.9)
    rows = [list(range(8)), list(range(8, 16))]
    query = app_query(shop, {"inputs": rows})
    assert (query.kind, query.target, query.signature) == ("app", "shop", "x:float32:8")
    assert query.requirements == Requirements(slo_ms=50.0, min_accuracy=0.9)
    assert (query.app, query.policy, query.cache, query.prefer, query.variant) == (
        "shop",
        "best_effort",
        True,
        "cost",
        None,
    )
    assert query.tensors["x"].shape == (2, 8)
    np.testing.assert_array_equal(query.tensors["x"], np.arange(16, dtype=np.float32).reshape(2, 8))


def test_app_query_values_override_defaults_even_zero() -> None:
    shop = app([model("small", X4)], latency=50.0, accuracy=0.9)
    query = app_query(shop, {"inputs": [[1, 2, 3, 4]], "latency_ms": 5, "min_accuracy": 0})
    assert query.requirements.slo_ms == 5
    assert query.requirements.min_accuracy == 0  # an explicit 0 is not "no value"


def test_app_query_without_defaults_sends_none_and_keeps_to_the_reference() -> None:
    shop = app([model("small", X4)], latency=None, accuracy=None)
    assert app_query(shop, {"inputs": [[1, 2, 3, 4]]}).requirements == Requirements(at_reference=True)


# --- the app's defaults on named-model queries, and the reference floor ----------------------------------


def test_model_query_applies_the_apps_default_latency_and_accuracy() -> None:
    # An app that asks for accuracy 1.0: a named-model query stating none must carry it too.
    owner = app([], latency=40.0, accuracy=1.0)
    query = model_query(model("clf", X4), owner, {"inputs": [[1, 2, 3, 4]]})
    assert query.requirements == Requirements(slo_ms=40.0, min_accuracy=1.0)
    stated = model_query(model("clf", X4), owner, {"inputs": [[1, 2, 3, 4]], "min_accuracy": 0.5})
    assert stated.requirements == Requirements(slo_ms=40.0, min_accuracy=0.5)
    # Both transports read the same Query: the frame carries what the gateway filled in.
    assert Query.decode(query.encode()).requirements == query.requirements


def test_no_accuracy_anywhere_keeps_to_the_reference_unless_lossy() -> None:
    strict = app([model("small", X4)], latency=None, accuracy=None)
    lossy = strict.model_copy(update={"lossy": True})
    for kind_query in (
        lambda owner: model_query(model("clf", X4), owner, {"inputs": [[1, 2, 3, 4]]}),
        lambda owner: app_query(owner, {"inputs": [[1, 2, 3, 4]]}),
    ):
        assert kind_query(strict).requirements.at_reference is True
        assert kind_query(lossy).requirements == Requirements()


def test_a_stated_accuracy_replaces_the_reference_floor() -> None:
    owner = app([model("small", X4)], latency=None, accuracy=0.8)
    assert app_query(owner, {"inputs": [[1, 2, 3, 4]]}).requirements == Requirements(min_accuracy=0.8)


def test_a_pinned_variant_is_not_held_to_the_reference() -> None:
    owner = app([], latency=None, accuracy=None)
    query = model_query(model("clf", X4), owner, {"inputs": [[1, 2, 3, 4]], "variant": "clf.int8"})
    assert query.requirements == Requirements()
    assert Query.decode(query.encode()).requirements == Requirements()


def test_app_query_ignores_failed_models() -> None:
    shop = app([model("small", X4, mid=1), model("broken", X2, status="failed", mid=2)])
    with pytest.raises(InvalidInput) as info:
        app_query(shop, {"inputs": [[1, 2]]})
    # The only live signature takes 4 columns: that is the mismatch reported.
    assert info.value.details["expected_shape"] == [None, 4]
    assert info.value.details["got_shape"] == [1, 2]


def test_app_query_raises_the_first_mismatch_when_none_match() -> None:
    shop = app([model("small", X4, mid=1), model("wide", X8, mid=2)])
    with pytest.raises(InvalidInput) as info:
        app_query(shop, {"inputs": [[1, 2, 3]]})
    assert info.value.details["expected_shape"] == [None, 4]  # from the first model, not the second


def test_app_query_same_signature_twice_is_fine() -> None:
    shop = app([model("a", X4, mid=1), model("b", X4, mid=2)])
    query = app_query(shop, {"inputs": [[1, 2, 3, 4]]})
    assert query.signature == "x:float32:4"
    assert query.tensors["x"].shape == (1, 4)


@pytest.mark.parametrize(
    "models",
    [[], [model("broken", X4, status="failed")]],
    ids=["no-models", "only-failed"],
)
def test_app_query_without_a_usable_model(models: list[ModelInternal]) -> None:
    with pytest.raises(InvalidInput) as info:
        app_query(app(models), {"inputs": [[1, 2, 3, 4]]})
    assert info.value.details == {"app": "shop"}


def test_default_policy_carries_the_default_output_and_pinning_is_for_models_only() -> None:
    shop = app([model("small", X4, mid=1)]).model_copy(
        update={"slo_policy": "default", "default_output": {"y": [0.5, 0.5]}}
    )
    query = app_query(shop, {"inputs": [[1, 2, 3, 4]]})
    assert query.policy == "default" and query.default_output == {"y": [0.5, 0.5]}
    assert Query.decode(query.encode()).default_output == {"y": [0.5, 0.5]}
    with pytest.raises(InvalidInput) as info:
        app_query(shop, {"inputs": [[1, 2, 3, 4]], "variant": "small.x"})
    assert info.value.details["field"] == "variant"
    with pytest.raises(InvalidInput) as typed:
        model_query(model("small", X4), shop, {"inputs": [[1, 2, 3, 4]], "variant": 7})
    assert typed.value.details["field"] == "variant"
    assert model_query(model("small", X4), shop, {"inputs": [[1, 2, 3, 4]], "variant": "v1"}).variant == "v1"
