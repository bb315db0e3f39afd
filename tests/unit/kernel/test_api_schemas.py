"""The public API's wire schemas refuse what the registry could not store or answer: explicit nulls for
fields that always hold a value, and numbers that are not finite (each was a 500 before)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from infaas.schemas.api import AppCreate, AppUpdate, VariantFilter


@pytest.mark.parametrize("field", ["slo_policy", "cache", "prefer", "warm_instances"])
def test_app_update_refuses_null_for_fields_that_always_hold_a_value(field: str) -> None:
    with pytest.raises(ValidationError, match="cannot be null") as info:
        AppUpdate.model_validate({field: None})
    assert info.value.errors()[0]["loc"] == (field,)
    assert "null" not in str(AppUpdate.model_json_schema()["properties"][field])


def test_app_update_null_still_clears_the_defaults_and_omitted_fields_stay() -> None:
    cleared = {"default_latency_ms": None, "default_min_accuracy": None, "default_output": None}
    assert AppUpdate.model_validate(cleared).model_dump(exclude_unset=True) == cleared
    assert AppUpdate.model_validate({"cache": False}).model_dump(exclude_unset=True) == {"cache": False}


@pytest.mark.parametrize(
    "fields",
    [
        {"default_latency_ms": float("inf")},
        {"default_latency_ms": float("nan")},
        {"default_latency_ms": 1e300},
        {"default_min_accuracy": float("nan")},
        {"default_output": {"y": [float("nan")]}},
        {"default_output": {"y": [[1.0, float("-inf")]]}},
    ],
)
@pytest.mark.parametrize("schema", [AppCreate, AppUpdate])
def test_app_numbers_must_be_finite(schema: type[AppCreate | AppUpdate], fields: dict[str, Any]) -> None:
    body = {"name": "a1", **fields} if schema is AppCreate else fields
    with pytest.raises(ValidationError):
        schema.model_validate(body)


@pytest.mark.parametrize("field", ["min_accuracy", "max_latency_ms", "max_cost_per_query"])
def test_variant_filter_numbers_must_be_finite(field: str) -> None:
    for value in ("inf", "nan"):
        with pytest.raises(ValidationError):
            VariantFilter.model_validate({field: value})


@pytest.mark.parametrize("value", [-1, 65, 1.5, True, "2"])
@pytest.mark.parametrize("schema", [AppCreate, AppUpdate])
def test_warm_instances_is_a_whole_number_from_0_to_64(
    schema: type[AppCreate | AppUpdate], value: object
) -> None:
    body: dict[str, Any] = {"warm_instances": value} | ({"name": "a1"} if schema is AppCreate else {})
    with pytest.raises(ValidationError) as info:
        schema.model_validate(body)
    assert info.value.errors()[0]["loc"][0] == "warm_instances"
    assert schema.model_validate({**body, "warm_instances": 0}).warm_instances == 0
    assert AppCreate(name="a1").warm_instances == 1  # loaded once ready unless the app says otherwise
