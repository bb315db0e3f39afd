"""Decoded Open Inference Protocol tensors → the same `Query` as `/v1` queries (exact names and dtypes,
the app's defaults for omitted requirements, the first of an app's signatures that fits)."""

from __future__ import annotations

import numpy as np
import pytest

from gateway.dataplane.queries import arrays_for, build
from infaas.clients.envelope import Query
from infaas.core.errors import InvalidInput
from infaas.policy.selection import Requirements
from infaas.schemas.api import AppInternal, ModelInternal
from infaas.wire.tensors import Signature
from tests.unit.gateway.test_queries import TWO_INPUTS, X2, X4, app, model


def test_arrays_must_match_names_and_dtypes_exactly() -> None:
    a = np.zeros((3, 2), dtype=np.float32)
    b = np.ones((3, 1), dtype=np.int64)
    checked = arrays_for(TWO_INPUTS, {"b": b, "a": a}, max_rows=8)
    assert list(checked) == ["a", "b"] and checked["b"].dtype == np.int64
    with pytest.raises(InvalidInput, match="input 'a' must hold float32 values; got float64") as info:
        arrays_for(TWO_INPUTS, {"a": a.astype(np.float64), "b": b}, max_rows=8)
    assert info.value.details["expected_dtype"] == "float32"
    with pytest.raises(InvalidInput, match="input names") as names:
        arrays_for(TWO_INPUTS, {"a": a, "c": b}, max_rows=8)
    assert names.value.details["missing"] == ["b"] and names.value.details["unexpected"] == ["c"]
    with pytest.raises(InvalidInput, match="same number of rows"):
        arrays_for(TWO_INPUTS, {"a": a, "b": b[:2]}, max_rows=8)
    with pytest.raises(InvalidInput, match="1 to 2 rows"):
        arrays_for(TWO_INPUTS, {"a": a, "b": b}, max_rows=2)
    with pytest.raises(InvalidInput, match="NaN"):
        arrays_for(Signature.from_json(X2), {"x": np.array([[np.nan, 1]], dtype=np.float32)}, max_rows=8)


def query(
    owner: AppInternal,
    m: ModelInternal | None,
    arrays: dict[str, np.ndarray],
    asked: Requirements,
    variant: str | None = None,
) -> Query:
    return build(
        owner,
        m,
        lambda signature: arrays_for(signature, arrays, max_rows=8),
        asked,
        variant=variant,
        request_id="r1",
    )


def test_model_query_carries_requirements_pin_and_the_apps_policy() -> None:
    m = model("m", X4)
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    q = query(app([m]), m, {"x": x}, Requirements(slo_ms=20.0), variant="m.v1")
    assert q.kind == "model" and q.target == "m" and q.variant == "m.v1"
    # The app's defaults fill in what the query leaves open, on /v2 as on /v1 (its latency stays its own).
    assert q.requirements == Requirements(slo_ms=20.0, min_accuracy=0.9)
    assert q.policy == "best_effort" and q.app == "shop" and q.request_id == "r1"
    np.testing.assert_array_equal(q.tensors["x"], x)


def test_app_query_picks_the_signature_that_fits_and_fills_in_defaults() -> None:
    shop = app(
        [model("two", X2, mid=1), model("four", X4, mid=2), model("broken", X4, status="failed", mid=3)]
    )
    x = np.ones((1, 4), dtype=np.float32)
    q = query(shop, None, {"x": x}, Requirements(min_accuracy=0.5))
    assert q.kind == "app" and q.signature == Signature.from_json(X4).key
    assert q.requirements == Requirements(slo_ms=50.0, min_accuracy=0.5)
    np.testing.assert_array_equal(q.tensors["x"], x)
    with pytest.raises(InvalidInput, match="must have shape"):
        query(shop, None, {"x": np.ones((1, 3), np.float32)}, Requirements())
    with pytest.raises(InvalidInput, match="no registered model"):
        query(app([]), None, {"x": x}, Requirements())
