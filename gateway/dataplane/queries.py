"""Turning a request into the scheduler's `Query` (the gateway's hot path): the fields a query states
checked once for both transports (`stated`: a `/v1` body's, through `parse_body`, or an OIP request's
parameters), the inputs checked against the target's signature (`tensors_for` for JSON batches,
`arrays_for` for decoded OIP tensors), and one builder of the query for every transport (`build`;
`from_json` for `/v1`). The fields themselves are declared in `infaas.clients.envelope.QUERY_FIELDS`."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

import numpy as np
import orjson

from infaas.clients.envelope import V1_FIELDS, Query
from infaas.core.errors import BadRequest, InvalidInput
from infaas.core.tasks import check_stated, one_task
from infaas.policy.selection import Requirements
from infaas.policy.slo_miss import RULES
from infaas.schemas.api import MAX_LATENCY_MS, AppInternal, ModelInternal
from infaas.schemas.selection import MAX_USER_CHARS
from infaas.wire.tensors import Signature, check_array, coerce_batch


class Stated(NamedTuple):
    """What a query states beside its inputs, checked: its requirements, a pinned variant, the task of
    the models that may answer, and the user of a selection query."""

    requirements: Requirements
    variant: str | None = None
    task: str | None = None
    user: str | None = None


def stated(fields: Mapping[str, Any]) -> Stated:
    """The one check of the fields a query states (`QUERY_FIELDS` less `inputs`), for both transports:
    each of its type and in its range, or absent; a violation is a 422 naming the field. Whether a
    field applies to the query's target is its builder's to say (`from_json`, OIP's route)."""
    variant, task, user = fields.get("variant"), fields.get("task"), fields.get("user")
    if variant is not None and type(variant) is not str:
        raise InvalidInput("variant must be a variant id (a string)", field="variant")
    if user is not None and not (type(user) is str and 0 < len(user) <= MAX_USER_CHARS):
        raise InvalidInput(f"user must be a string of 1..{MAX_USER_CHARS} characters", field="user")
    return Stated(requirements(fields), variant, check_stated(task), user)


def from_json(
    app: AppInternal,
    model: ModelInternal | None,
    data: dict[str, Any],
    asked: Stated,
    *,
    request_id: str,
    max_rows: int,
) -> Query:
    """A `/v1` query (its body as `parse_body` checked it) up to the `Query` for the app, or for `model`
    of that app."""
    if asked.user is not None:  # a selection query's field (gateway/selection/layer.py): never ignored
        raise InvalidInput(
            f"user applies to apps with a selection policy; app {app.name!r} has none", field="user"
        )
    if model is None and "variant" in data:
        raise InvalidInput(
            "pinning a variant is for named-model queries (POST /v1/models/{name}/infer)", field="variant"
        )
    raw = data["inputs"]
    return build(
        app,
        model,
        lambda signature: tensors_for(signature, raw, max_rows=max_rows),
        asked.requirements,
        variant=asked.variant,
        request_id=request_id,
        task=asked.task,
    )


def parse_body(body: bytes) -> tuple[dict[str, Any], Stated]:
    """A `/v1` query body's fields, and what they state checked."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise BadRequest("the body is not valid JSON", reason=str(exc)[:200]) from exc
    if not isinstance(data, dict):
        raise InvalidInput("the body must be a JSON object with 'inputs'")
    unknown = data.keys() - V1_FIELDS
    if unknown:
        raise InvalidInput(f"unknown fields: {sorted(unknown)}", allowed=sorted(V1_FIELDS))
    if "inputs" not in data:
        raise InvalidInput("missing 'inputs': a batch of rows")
    return data, stated(data)


def requirements(fields: Mapping[str, Any]) -> Requirements:
    """The one check of a query's requirements, for both transports: each a number in its range, or
    absent; a violation is a 422 naming the field. The scheduler's selection reads the same type."""
    latency = fields.get("latency_ms")
    if latency is not None and not (_is_number(latency) and 0 < latency <= MAX_LATENCY_MS):
        raise InvalidInput(
            f"latency_ms must be a number > 0 and at most {MAX_LATENCY_MS:.0f} (a day)", field="latency_ms"
        )
    accuracy = fields.get("min_accuracy")
    if accuracy is not None and not (_is_number(accuracy) and 0 <= accuracy <= 1):
        raise InvalidInput("min_accuracy must be a number between 0 and 1", field="min_accuracy")
    cost = fields.get("max_cost")
    if cost is not None and not (_is_number(cost) and cost >= 0):
        raise InvalidInput("max_cost must be a number >= 0 ($ for this query)", field="max_cost")
    return Requirements(latency, accuracy, cost)


def _is_number(value: Any) -> bool:
    """A finite number: JSON parsers differ on 1e999 (orjson refuses it, the stdlib reads infinity)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer beyond any float
        return False


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


def arrays_for(
    signature: Signature, arrays: dict[str, np.ndarray], *, max_rows: int
) -> dict[str, np.ndarray]:
    """Already-decoded tensors (the Open Inference Protocol's typed inputs) checked against a signature:
    names and dtypes exactly, as the protocol states; shapes, rows and values as for JSON batches
    (`tensors_for`). Any mismatch is a 422 naming the input."""
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


@dataclass(frozen=True, slots=True)
class _AppIndex:
    """What a model-less query looks up in its app's record, built once per record."""

    keys: tuple[tuple[str, Signature], ...]
    """The distinct input signatures (key, signature) of the app's live models, in the models' order."""
    by_task: dict[str, tuple[tuple[str, Signature], ...]]
    """The same, per task, for a query that states one."""
    tasks: dict[str, tuple[str, ...]]
    """Per signature key, the tasks of the live models that take it."""


# An app record -> (that record, its index): like `_SIGNATURES`, found by the record's identity.
_APPS: dict[int, tuple[AppInternal, _AppIndex]] = {}


def _index(app: AppInternal) -> _AppIndex:
    found = _APPS.get(id(app))
    if found is None or found[0] is not app:
        if len(_APPS) >= 4096:
            _APPS.clear()
        keys: dict[str, Signature] = {}
        by_task: dict[str, dict[str, Signature]] = {}
        tasks: dict[str, set[str]] = {}
        for m in app.models:
            if m.status == "failed":
                continue
            signature, key = signature_of(m.signature)
            keys.setdefault(key, signature)
            by_task.setdefault(m.task, {}).setdefault(key, signature)
            tasks.setdefault(key, set()).add(m.task)
        index = _AppIndex(
            keys=tuple(keys.items()),
            by_task={t: tuple(ks.items()) for t, ks in by_task.items()},
            tasks={k: tuple(sorted(ts)) for k, ts in tasks.items()},
        )
        found = _APPS[id(app)] = (app, index)
    return found[1]


Inputs = Callable[[Signature], dict[str, np.ndarray]]
"""A request's inputs as checked arrays for one signature, or a 422 naming the input that does not fit:
`tensors_for` over a JSON batch, `arrays_for` over decoded tensors."""


def build(
    app: AppInternal,
    model: ModelInternal | None,
    inputs: Inputs,
    asked: Requirements,
    *,
    variant: str | None,
    request_id: str,
    task: object = None,
) -> Query:
    """The one builder of a query, for every transport. A named-model query (`model` given) takes its
    model's signature and task; a model-less one (`model` None) the first of the app's live models'
    signatures the inputs fit, and the task of the models with that signature: the stated `task`, or
    the only one (`infaas.core.tasks.one_task`). Either way the app's defaults fill in the requirements
    the query leaves open (see `_with_defaults`) and the app's settings travel with it, so the scheduler
    looks nothing up."""
    stated = check_stated(task)
    if model is not None:
        if stated is not None and stated != model.task:
            raise InvalidInput(f"model {model.name!r} is a {model.task} model", field="task", task=model.task)
        signature, key = signature_of(model.signature)
        req = _with_defaults(asked, app, pinned=variant is not None)
        return _query("model", model.name, key, req, inputs(signature), request_id, app, variant, model.task)
    first_error: InvalidInput | None = None
    index = _index(app)
    candidates = index.keys if stated is None else index.by_task.get(stated, ())
    if stated is not None and not candidates:
        raise InvalidInput(f"app {app.name!r} has no {stated} model", app=app.name, field="task")
    for key, signature in candidates:
        try:
            tensors = inputs(signature)
        except InvalidInput as exc:
            first_error = first_error or exc
            continue
        chosen = one_task(app.name, index.tasks[key], stated)
        req = _with_defaults(asked, app, pinned=False)
        return _query("app", app.name, key, req, tensors, request_id, app, None, chosen)
    if first_error is None:
        raise InvalidInput(f"app {app.name!r} has no registered model to answer queries", app=app.name)
    raise first_error


def _with_defaults(asked: Requirements, app: AppInternal, *, pinned: bool) -> Requirements:
    """The app's default latency and accuracy for what the query leaves open. A query that still
    states no accuracy is answered only by variants as accurate as their model as registered
    (`at_reference`) unless the app is `lossy`, or the query pins a variant (it named the form it
    wants, int8 included)."""
    latency = app.default_latency_ms if asked.slo_ms is None else asked.slo_ms
    accuracy = app.default_min_accuracy if asked.min_accuracy is None else asked.min_accuracy
    at_reference = accuracy is None and not app.lossy and not pinned
    if latency == asked.slo_ms and accuracy == asked.min_accuracy and at_reference == asked.at_reference:
        return asked  # nothing filled in: no new object on the hot path
    return Requirements(latency, accuracy, asked.max_cost, at_reference)


def _query(
    kind: Literal["app", "model"],
    target: str,
    key: str,
    requirements: Requirements,
    tensors: dict[str, np.ndarray],
    request_id: str,
    app: AppInternal,
    variant: str | None,
    task: str,
) -> Query:
    return Query(
        kind,
        target,
        key,
        requirements,
        tensors,
        request_id,
        app.name,
        app.slo_policy,
        app.cache,
        app.prefer,
        variant,
        app.default_output if RULES[app.slo_policy].uses_default_output else None,
        task,
    )
