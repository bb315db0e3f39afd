"""What the gateway hands the scheduler (`Query`) and what it gets back (`Answer`), and — in this one
place — their binary frames (`infaas.wire.frames`) for a scheduler that runs as its own service.

The gateway builds a `Query` once, at the edge (`gateway/dataplane/queries.py`), and every hop after
reads its attributes; the scheduler returns an `Answer` (outputs as arrays, and what it did) that each
transport renders (`/v1` JSON, OIP JSON or binary). With the scheduler embedded in the gateway process
the objects themselves are handed over: nothing is encoded. Here, not in `infaas.wire`, because a query
carries the scheduler's own `Requirements` (`infaas.policy`), which the wire layer may not import.

Both are `NamedTuple`s: immutable and without a per-instance dict, as a frozen slotted dataclass would be,
but built at tuple speed (a frozen dataclass sets each field through `object.__setattr__`), once per query.
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

import numpy as np

from infaas.core.errors import BadRequest
from infaas.core.tasks import TASKS
from infaas.policy.selection import Requirements
from infaas.schemas.api import Prefer, SloPolicy
from infaas.wire.frames import decode_frame, encode_frame

FRAME_TYPE = "application/x-infaas-frame"
"""Content type of a query or answer frame between the gateway and a scheduler service."""


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
            "latency_ms": req.latency_ms,
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
                    header["latency_ms"],
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
