"""Turning a JSON query into a validated binary frame for the scheduler (the gateway's hot path)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import orjson

from infaas.core.errors import BadRequest, InvalidInput
from infaas.policy.selection import Requirements
from infaas.schemas.api import AppInternal, ModelInternal
from infaas.wire.frames import Message
from infaas.wire.tensors import Signature, check_array, coerce_batch

_FIELDS = frozenset({"inputs", "latency_ms", "min_accuracy", "max_cost", "variant"})


def parse_body(body: bytes) -> dict[str, Any]:
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise BadRequest("the body is not valid JSON", reason=str(exc)[:200]) from exc
    if not isinstance(data, dict):
        raise InvalidInput("the body must be a JSON object with 'inputs'")
    unknown = set(data) - _FIELDS
    if unknown:
        raise InvalidInput(f"unknown fields: {sorted(unknown)}", allowed=sorted(_FIELDS))
    if "inputs" not in data:
        raise InvalidInput("missing 'inputs': a batch of rows")
    requirements(data)
    return data


def requirements(fields: Mapping[str, Any]) -> Requirements:
    """The one check of a query's requirements, for both transports: each a number in its range, or
    absent; a violation is a 422 naming the field. The scheduler's selection reads the same type."""
    latency = fields.get("latency_ms")
    if latency is not None and not (_is_number(latency) and latency > 0):
        raise InvalidInput("latency_ms must be a number > 0", field="latency_ms")
    accuracy = fields.get("min_accuracy")
    if accuracy is not None and not (_is_number(accuracy) and 0 <= accuracy <= 1):
        raise InvalidInput("min_accuracy must be a number between 0 and 1", field="min_accuracy")
    cost = fields.get("max_cost")
    if cost is not None and not (_is_number(cost) and cost >= 0):
        raise InvalidInput("max_cost must be a number >= 0 ($ for this query)", field="max_cost")
    return Requirements(latency, accuracy, cost)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def tensors_for(signature: Signature, raw: Any, *, max_rows: int) -> dict[str, np.ndarray]:
    """Inputs as arrays of the model's dtypes and shapes; any mismatch is a 422 naming the input."""
    specs = signature.inputs
    if isinstance(raw, dict):
        missing = [s.name for s in specs if s.name not in raw]
        extra = sorted(set(raw) - {s.name for s in specs})
        if missing or extra:
            raise InvalidInput(
                "inputs do not match the model's input names",
                expected=[s.name for s in specs],
                missing=missing,
                unexpected=extra,
            )
        arrays = {s.name: coerce_batch(raw[s.name], s, max_rows=max_rows) for s in specs}
    elif len(specs) == 1:
        arrays = {specs[0].name: coerce_batch(raw, specs[0], max_rows=max_rows)}
    else:
        raise InvalidInput(
            "this model has several inputs: send {input name: batch}", expected=[s.name for s in specs]
        )
    rows = {a.shape[0] for a in arrays.values()}
    if len(rows) > 1:
        raise InvalidInput("every input must carry the same number of rows")
    return arrays


# A model record's signature (its JSON object) -> (that object, the parsed signature, its key). The auth
# cache hands every query of a model the same record, so the object's identity finds the entry without
# serializing anything per query; holding the object keeps its id from being reused while it is here.
_SIGNATURES: dict[int, tuple[dict[str, Any], Signature, str]] = {}


def signature_of(raw: dict[str, Any]) -> tuple[Signature, str]:
    """A model's signature and its key from the model record's JSON, parsed once per record (the
    record is the auth cache's, re-fetched now and then)."""
    found = _SIGNATURES.get(id(raw))
    if found is None or found[0] is not raw:
        if len(_SIGNATURES) >= 4096:  # bounded: records are few, but nothing here trusts that
            _SIGNATURES.clear()
        signature = Signature.from_json(raw)
        found = _SIGNATURES[id(raw)] = (raw, signature, signature.key)
    return found[1], found[2]


def _policy(app: AppInternal) -> dict[str, Any]:
    """What the scheduler needs of the app's settings, in the query's frame (no lookup on its side)."""
    header: dict[str, Any] = {
        "app": app.name,
        "policy": app.slo_policy,
        "cache": app.cache,
        "prefer": app.prefer,
    }
    if app.slo_policy == "default":
        header["default_output"] = app.default_output
    return header


def model_frame(model: ModelInternal, app: AppInternal, data: dict[str, Any], *, max_rows: int) -> Message:
    variant = data.get("variant")
    if variant is not None and not isinstance(variant, str):
        raise InvalidInput("variant must be a variant id (a string)", field="variant")
    signature, key = signature_of(model.signature)
    arrays = tensors_for(signature, data["inputs"], max_rows=max_rows)
    header = {
        "kind": "model",
        "target": model.name,
        "signature": key,
        "latency_ms": data.get("latency_ms"),
        "min_accuracy": data.get("min_accuracy"),
        "max_cost": data.get("max_cost"),
        "variant": variant,
        **_policy(app),
    }
    return Message(header, arrays)


def app_frame(app: AppInternal, data: dict[str, Any], *, max_rows: int) -> Message:
    """Validate against the app's models' signatures (a query may match any of them)."""
    signatures: dict[str, Signature] = {}
    for m in app.models:
        if m.status != "failed":
            sig, key = signature_of(m.signature)
            signatures.setdefault(key, sig)
    if not signatures:
        raise InvalidInput(f"app {app.name!r} has no registered model to answer queries", app=app.name)
    if "variant" in data:
        raise InvalidInput(
            "pinning a variant is for named-model queries (POST /v1/models/{name}/infer)", field="variant"
        )
    first_error: InvalidInput | None = None
    for key, sig in signatures.items():
        try:
            arrays = tensors_for(sig, data["inputs"], max_rows=max_rows)
        except InvalidInput as exc:
            first_error = first_error or exc
            continue
        latency = data.get("latency_ms")
        accuracy = data.get("min_accuracy")
        header = {
            "kind": "app",
            "target": app.name,
            "signature": key,
            "latency_ms": app.default_latency_ms if latency is None else latency,
            "min_accuracy": app.default_min_accuracy if accuracy is None else accuracy,
            "max_cost": data.get("max_cost"),
            **_policy(app),
        }
        return Message(header, arrays)
    assert first_error is not None
    raise first_error


# Already-decoded tensors (the Open Inference Protocol's typed inputs): the same checks and frames as the
# JSON path above, except that names and dtypes must match the signature exactly, as the protocol states.


def arrays_for(
    signature: Signature, arrays: dict[str, np.ndarray], *, max_rows: int
) -> dict[str, np.ndarray]:
    """Named arrays checked against a signature: exact names and dtypes; shapes, rows and values as
    for JSON batches. Any mismatch is a 422 naming the input."""
    expected = [s.name for s in signature.inputs]
    missing = [n for n in expected if n not in arrays]
    extra = sorted(set(arrays) - set(expected))
    if missing or extra:
        raise InvalidInput(
            "inputs do not match the model's input names",
            expected=expected,
            missing=missing,
            unexpected=extra,
        )
    checked: dict[str, np.ndarray] = {}
    for spec in signature.inputs:
        array = arrays[spec.name]
        if array.dtype != np.dtype(spec.dtype):
            raise InvalidInput(
                f"input {spec.name!r} must hold {spec.dtype} values; got {array.dtype.name}",
                input=spec.name,
                expected_dtype=spec.dtype,
                got_dtype=array.dtype.name,
            )
        checked[spec.name] = check_array(array, spec, max_rows=max_rows)
    if len({a.shape[0] for a in checked.values()}) > 1:
        raise InvalidInput("every input must carry the same number of rows")
    return checked


def model_frame_from_arrays(
    model: ModelInternal,
    app: AppInternal,
    arrays: dict[str, np.ndarray],
    *,
    latency_ms: float | None,
    min_accuracy: float | None,
    variant: str | None,
    max_rows: int,
    max_cost: float | None = None,
) -> Message:
    """`model_frame` for decoded arrays (requirements already validated by the caller)."""
    signature, key = signature_of(model.signature)
    header = {
        "kind": "model",
        "target": model.name,
        "signature": key,
        "latency_ms": latency_ms,
        "min_accuracy": min_accuracy,
        "max_cost": max_cost,
        "variant": variant,
        **_policy(app),
    }
    return Message(header, arrays_for(signature, arrays, max_rows=max_rows))


def app_frame_from_arrays(
    app: AppInternal,
    arrays: dict[str, np.ndarray],
    *,
    latency_ms: float | None,
    min_accuracy: float | None,
    max_rows: int,
    max_cost: float | None = None,
) -> Message:
    """`app_frame` for decoded arrays: the first of the app's signatures they match; the app's defaults
    fill in the requirements the query omits."""
    first_error: InvalidInput | None = None
    seen: set[str] = set()
    for m in app.models:
        signature, key = signature_of(m.signature)
        if m.status == "failed" or key in seen:
            continue
        seen.add(key)
        try:
            checked = arrays_for(signature, arrays, max_rows=max_rows)
        except InvalidInput as exc:
            first_error = first_error or exc
            continue
        header = {
            "kind": "app",
            "target": app.name,
            "signature": key,
            "latency_ms": app.default_latency_ms if latency_ms is None else latency_ms,
            "min_accuracy": app.default_min_accuracy if min_accuracy is None else min_accuracy,
            "max_cost": max_cost,
            **_policy(app),
        }
        return Message(header, checked)
    if first_error is None:
        raise InvalidInput(f"app {app.name!r} has no registered model to answer queries", app=app.name)
    raise first_error
