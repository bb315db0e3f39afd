"""Decoded Open Inference Protocol tensors → the same binary frames as `/v1` queries (exact names and
dtypes, the app's defaults for omitted requirements, the first of an app's signatures that fits)."""

from __future__ import annotations

import numpy as np
import pytest

from gateway.dataplane.queries import app_frame_from_arrays, arrays_for, model_frame_from_arrays
from infaas.core.errors import InvalidInput
from infaas.wire.frames import decode_frame
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


def test_model_frame_carries_requirements_pin_and_the_apps_policy() -> None:
    m = model("m", X4)
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    frame = model_frame_from_arrays(
        m, app([m]), {"x": x}, latency_ms=20.0, min_accuracy=None, variant="m.v1", max_rows=8
    )
    header, tensors = decode_frame(frame.encode())
    assert header["kind"] == "model" and header["target"] == "m" and header["variant"] == "m.v1"
    assert header["latency_ms"] == 20.0 and header["min_accuracy"] is None  # a named model has no defaults
    assert header["policy"] == "best_effort" and header["app"] == "shop"
    np.testing.assert_array_equal(tensors["x"], x)


def test_app_frame_picks_the_signature_that_fits_and_fills_in_defaults() -> None:
    shop = app(
        [model("two", X2, mid=1), model("four", X4, mid=2), model("broken", X4, status="failed", mid=3)]
    )
    x = np.ones((1, 4), dtype=np.float32)
    header, tensors = decode_frame(
        app_frame_from_arrays(shop, {"x": x}, latency_ms=None, min_accuracy=0.5, max_rows=8).encode()
    )
    assert header["kind"] == "app" and header["signature"] == Signature.from_json(X4).key
    assert header["latency_ms"] == 50.0 and header["min_accuracy"] == 0.5
    np.testing.assert_array_equal(tensors["x"], x)
    with pytest.raises(InvalidInput, match="must have shape"):
        app_frame_from_arrays(
            shop, {"x": np.ones((1, 3), np.float32)}, latency_ms=None, min_accuracy=None, max_rows=8
        )
    with pytest.raises(InvalidInput, match="no registered model"):
        app_frame_from_arrays(app([]), {"x": x}, latency_ms=None, min_accuracy=None, max_rows=8)
