"""The query between the gateway and the scheduler: the fields a caller may state (`QUERY_FIELDS`, the one
declaration of them), what the gateway hands the scheduler (`Query`) and what it gets back (`Answer`),
and — in this one place — their binary frames (`infaas.wire.frames`) for a scheduler that runs as its
own service.

`QUERY_FIELDS` is where a query field is declared: the `/v1` body's fields (`V1_FIELDS`), the Open
Inference Protocol's request parameters (`OIP_PARAMETERS`), the request schemas the OpenAPI document
publishes (`InferRequest`, `oip_parameters_schema`) and so the generated SDK all derive from it
(tests/unit/gateway/test_query_fields.py fails when one drifts). A new field is an entry here and an
attribute of `Query` (with its frame key below), its check where the gateway builds queries
(`gateway/dataplane/queries.py`), and its use in the scheduler: three files and the regenerated SDK.

The gateway builds a `Query` once, at the edge (`gateway/dataplane/queries.py`), and every hop after
reads its attributes; the scheduler returns an `Answer` (outputs as arrays, and what it did) that each
transport renders (`/v1` JSON, OIP JSON or binary). With the scheduler embedded in the gateway process
the objects themselves are handed over: nothing is encoded. Here, not in `infaas.wire`, because a query
carries the scheduler's own `Requirements` (`infaas.policy`), which the wire layer may not import.

Both are `NamedTuple`s: immutable and without a per-instance dict, as a frozen slotted dataclass would be,
but built at tuple speed (a frozen dataclass sets each field through `object.__setattr__`), once per query.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

import numpy as np
from pydantic import BaseModel, Field, create_model

from infaas.core.errors import BadRequest
from infaas.core.tasks import TASKS
from infaas.policy.selection import Requirements
from infaas.schemas.api import MAX_LATENCY_MS, Prefer, SloPolicy
from infaas.schemas.selection import MAX_USER_CHARS, SelectionReport
from infaas.wire.frames import decode_frame, encode_frame

FRAME_TYPE = "application/x-infaas-frame"
"""Content type of a query or answer frame between the gateway and a scheduler service."""


@dataclass(frozen=True)
class QueryField:
    """One field a caller may state in a query: its schema, and whether the Open Inference Protocol
    takes it as a request parameter (its tensors travel apart, so `inputs` is `/v1`'s only)."""

    name: str
    annotation: Any
    info: Any
    """Its pydantic `Field(...)` (typed as its default by pydantic, a `FieldInfo` in fact)."""
    oip: bool


QUERY_FIELDS: tuple[QueryField, ...] = (
    QueryField(
        "inputs",
        list[Any] | dict[str, list[Any]],
        Field(description="A batch: nested lists (one input) or {input name: nested lists}."),
        oip=False,
    ),
    QueryField(
        "latency_ms",
        float | None,
        Field(
            None,
            gt=0,
            le=MAX_LATENCY_MS,
            description="Latency SLO of this query; the app's default when omitted.",
        ),
        oip=True,
    ),
    QueryField(
        "min_accuracy",
        float | None,
        Field(None, ge=0, le=1, description="Lowest acceptable accuracy; the app's default when omitted."),
        oip=True,
    ),
    QueryField(
        "max_cost",
        float | None,
        Field(
            None,
            ge=0,
            description="Cost cap in $ for this query: a variant's profiled $ per row × the rows sent.",
        ),
        oip=True,
    ),
    QueryField(
        "variant",
        str | None,
        Field(
            None, description="Named-model queries only: run exactly this variant (for benchmarks and tests)."
        ),
        oip=True,
    ),
    QueryField(
        "task",
        Literal["classification", "regression"] | None,
        Field(
            None,
            description="Answer with a model of this task. Needed by a model-less query only where the app "
            "has models of several tasks that take its inputs; a named-model query's is its model's.",
        ),
        oip=True,
    ),
    QueryField(
        "user",
        str | None,
        Field(
            None,
            min_length=1,
            max_length=MAX_USER_CHARS,
            description="Apps with a selection policy only: the end user the answer is for (Velox's "
            "personalization learns a head per user from the feedback on their queries).",
        ),
        oip=False,
    ),
)
"""The fields of a query, in the order the documents list them."""

V1_FIELDS = frozenset(f.name for f in QUERY_FIELDS)
"""What a `/v1` query body may hold."""
OIP_PARAMETERS = frozenset(f.name for f in QUERY_FIELDS if f.oip)
"""The query fields an Open Inference Protocol request takes in its `parameters`."""

InferRequest: type[BaseModel] = create_model(  # published in the OpenAPI document; parsed by hand
    "InferRequest",
    __doc__="A query: a batch of inputs plus what the answer must achieve.",
    **{f.name: (f.annotation, f.info) for f in QUERY_FIELDS},  # type: ignore[call-overload]
)


class QueryLatency(BaseModel):
    queue: float = Field(description="From the dispatcher's sending to the worker picking it up (ms).")
    compute: float = Field(description="The run of the batch it was in (ms).")
    total: float = Field(description="From the query's arrival at the dispatcher to its answer (ms).")


class FailoverNote(BaseModel):
    from_: str = Field(alias="from", description="The variant the failed worker served.")
    reason: str = Field(description="Why this variant answers instead: the failover step that placed it.")


class InferResponse(BaseModel):
    """A `/v1` answer: an `Answer` as `gateway/dataplane/routes.py` renders it, or, for an app with a
    selection policy, the selection layer's combination (gateway/selection/layer.py)."""

    outputs: dict[str, list[Any]]
    model: str
    variant: str
    worker: str
    hardware: str
    latency_ms: QueryLatency = Field(
        description="What the query's answer took, measured (its SLO went in as latency_ms)."
    )
    slo_met: bool | None = Field(description="Whether total latency met the SLO; null when none was set.")
    cached: bool = Field(False, description="Answered from the prediction cache.")
    default: bool = Field(False, description="The SLO was missed and the app's default output answered.")
    reason: str = Field(description="Why this variant was chosen, and what happened.")
    request_id: str
    failover: FailoverNote | None = Field(
        None, description="Set when a fallback variant answered because the worker serving the app failed."
    )
    reconstructed: bool = Field(
        False,
        description="The outputs were decoded from the query's coding group's parity model output (app "
        "redundancy parity), because that came before the query's own answer: an approximation, never "
        "cached.",
    )
    selection: SelectionReport | None = Field(
        None, description="Apps with a selection policy: which models answered and how they were combined."
    )


def oip_parameters_schema(name: str, doc: str, **more: tuple[Any, Any]) -> type[BaseModel]:
    """The schema of an OIP request's `parameters`: the query fields it takes, and `more` of the
    protocol's own (gateway/oip/schemas.py)."""
    fields = {f.name: (f.annotation, f.info) for f in QUERY_FIELDS if f.oip}
    return create_model(  # type: ignore[call-overload, no-any-return]
        name, __doc__=doc, __config__={"extra": "forbid"}, **fields, **more
    )


class Query(NamedTuple):
    """One validated query, as the gateway built it: the target, what it asks, its inputs (checked
    against the signature they matched) and the settings of its app the scheduler acts on."""

    kind: Literal["app", "model"]
    target: str
    """The app's name (a model-less query) or the model's."""
    signature: str
    """The key of the signature the inputs matched (an app's models may have several)."""
    requirements: Requirements
    """With the app's defaults filled in, and `at_reference` set when it states no accuracy and the
    app is not lossy."""
    tensors: dict[str, np.ndarray]
    request_id: str
    app: str
    """The app the query counts against (a named model's own app)."""
    policy: SloPolicy = "best_effort"
    """The app's SLO policy: `error`, `default` or `best_effort`."""
    cache: bool = True
    prefer: Prefer = "cost"
    variant: str | None = None
    """A pinned variant (named-model queries only)."""
    default_output: dict[str, list[Any]] | None = None
    """The app's default output row under the `default` policy."""
    task: str = "classification"
    """The task of the models that may answer (`infaas.core.tasks`): a model-less query runs only the
    app's models of this task; a named-model query's is its model's."""

    @property
    def rows(self) -> int:
        return int(next(iter(self.tensors.values())).shape[0])

    def encode(self) -> bytes:
        req = self.requirements
        header = {
            "kind": self.kind,
            "target": self.target,
            "signature": self.signature,
            "slo_ms": req.slo_ms,
            "min_accuracy": req.min_accuracy,
            "max_cost": req.max_cost,
            "at_reference": req.at_reference,
            "request_id": self.request_id,
            "app": self.app,
            "policy": self.policy,
            "cache": self.cache,
            "prefer": self.prefer,
            "variant": self.variant,
            "default_output": self.default_output,
            "task": self.task,
        }
        return encode_frame(header, self.tensors)

    @classmethod
    def decode(cls, frame: bytes | memoryview) -> Query:
        """A query from its frame; a malformed one is a `BadRequest`."""
        header, tensors = decode_frame(frame)
        try:
            return cls(
                _one_of(header["kind"], ("app", "model")),
                _text(header["target"]),
                _text(header["signature"]),
                Requirements(
                    header["slo_ms"],
                    header["min_accuracy"],
                    header["max_cost"],
                    bool(header["at_reference"]),
                ),
                tensors,
                _text(header["request_id"]),
                _text(header["app"]),
                _one_of(header["policy"], ("error", "default", "best_effort")),
                bool(header["cache"]),
                _one_of(header["prefer"], ("cost", "latency")),
                header["variant"],
                header["default_output"],
                # A gateway older than tasks sends none: its queries are for classifiers.
                _one_of(header.get("task", "classification"), _TASKS),
            )
        except KeyError as exc:
            raise BadRequest(f"query frame without {exc.args[0]!r}") from exc


class Answer(NamedTuple):
    """The scheduler's answer to one query: the outputs, and what it did and why."""

    outputs: dict[str, np.ndarray]
    model: str
    variant: str
    """The variant that computed the outputs (for a cache hit, the one that computed the cached ones)."""
    worker: str
    """The worker that ran it; `cache` for a cache hit, `none` for the app's default output."""
    hardware: str
    queue_ms: float
    compute_ms: float
    total_ms: float
    slo_met: bool | None
    """None when the query had no latency SLO."""
    cached: bool
    default: bool
    """The SLO passed and the app's default output was answered (`default` policy)."""
    reason: str
    request_id: str
    failover: dict[str, str] | None = None
    """Set when a fallback variant answered for a failed one: `{from: <failed variant>, reason}`."""
    reconstructed: bool = False
    """The outputs were decoded from its coding group's parity output (ParM), not computed by `variant`:
    an approximation that came before the query's own answer."""

    def encode(self) -> bytes:
        header = {
            "model": self.model,
            "variant": self.variant,
            "worker": self.worker,
            "hardware": self.hardware,
            "queue_ms": self.queue_ms,
            "compute_ms": self.compute_ms,
            "total_ms": self.total_ms,
            "slo_met": self.slo_met,
            "cached": self.cached,
            "default": self.default,
            "reason": self.reason,
            "request_id": self.request_id,
        }
        if self.failover is not None:
            header["failover"] = self.failover
        if self.reconstructed:
            header["reconstructed"] = True
        return encode_frame(header, self.outputs)

    @classmethod
    def decode(cls, frame: bytes | memoryview) -> Answer:
        """An answer from its frame; the outputs are read-only views over `frame`."""
        header, outputs = decode_frame(frame)
        try:
            return cls(
                outputs,
                header["model"],
                header["variant"],
                header["worker"],
                header["hardware"],
                header["queue_ms"],
                header["compute_ms"],
                header["total_ms"],
                header["slo_met"],
                header["cached"],
                header["default"],
                header["reason"],
                header["request_id"],
                _failover(header.get("failover")),
                bool(header.get("reconstructed", False)),
            )
        except KeyError as exc:
            raise BadRequest(f"answer frame without {exc.args[0]!r}") from exc


def _failover(value: Any) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise BadRequest("answer frame field 'failover' is not an object of strings")
    return {str(k): v for k, v in value.items()}


_TASKS = tuple(sorted(TASKS))


def _one_of(value: Any, allowed: tuple[str, ...]) -> Any:
    if value not in allowed:
        raise BadRequest(f"query frame field {value!r} is not one of {list(allowed)}")
    return value


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise BadRequest(f"query frame field of type {type(value).__name__} where text was expected")
    return value
