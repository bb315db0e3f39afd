"""Wire schemas (pydantic) of the public and internal APIs; separate from the ORM rows."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, field_validator
from pydantic.json_schema import SkipJsonSchema

from infaas.schemas.parity import Redundancy
from infaas.schemas.selection import Selection

NAME_PATTERN = r"^[a-z0-9][a-z0-9_.-]{0,62}$"
INT64_MAX = 2**63 - 1
"""The largest id or count a query parameter may name: Postgres' bigint, beyond which a lookup is an error
in the database instead of a 422 here."""
MAX_LATENCY_MS = 86_400_000.0
"""A latency SLO longer than a day is a mistake, not a requirement."""
MAX_WARM_INSTANCES = 64
"""Bounds an app's `warm_instances`: a typo (1000) must not try to fill every worker."""
SloPolicy = Literal["error", "best_effort", "default"]
Prefer = Literal["cost", "latency"]
Criticality = Literal["normal", "critical"]
ModelStatus = Literal["registered", "profiling", "ready", "failed"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _finite_json(value: dict[str, list[Any]] | None) -> dict[str, list[Any]] | None:
    """A default output must be plain JSON: NaN or Infinity can be neither stored nor answered."""
    try:
        json.dumps(value, allow_nan=False)
    except ValueError:
        raise ValueError("default_output must hold finite numbers only") from None
    return value


class AppCreate(Strict):
    name: str = Field(pattern=NAME_PATTERN, description="Unique app name (lowercase, digits, . _ -).")
    default_latency_ms: float | None = Field(
        None, gt=0, le=MAX_LATENCY_MS, allow_inf_nan=False, description="Latency SLO when a query has none."
    )
    default_min_accuracy: float | None = Field(
        None, ge=0, le=1, allow_inf_nan=False, description="Minimum accuracy when a query has none."
    )
    slo_policy: SloPolicy = Field(
        "best_effort",
        description="What to answer when a query misses its SLO: `error` (504 saying what happened), "
        "`best_effort` (the late answer, marked `slo_met: false`) or `default` (`default_output`, marked "
        "`default: true`).",
    )
    default_output: dict[str, list[Any]] | None = Field(
        None, description="Outputs answered under the `default` policy: {output name: one row}."
    )
    cache: bool = Field(True, description="Serve repeated inputs from the prediction cache.")
    prefer: Prefer = Field(
        "cost", description="Among variants that meet a query: the cheapest per query, or the fastest."
    )
    lossy: bool = Field(
        False,
        description="Allow variants less accurate than the registered model (int8 quantization) when a query "
        "states no accuracy (none in the query, no `default_min_accuracy`). Off: such a query is answered "
        "only by variants at least as accurate as the model as registered (`reference_accuracy`).",
    )
    criticality: Criticality = Field(
        "normal",
        description="`critical`: the planner keeps a warm backup (loaded, idle, possibly a smaller variant "
        "of the app's models) on another worker, so a failed worker costs milliseconds; `normal`: a cold "
        "backup (the artifact ready, loaded when a worker fails, smallest variant first).",
    )
    warm_instances: StrictInt = Field(
        1,
        ge=0,
        le=MAX_WARM_INSTANCES,
        description="Instances kept loaded for each of the app's models once it is ready: the cheapest "
        "variant that meets the app's default requirements is loaded at once, and the planner never scales "
        "a model below this. 0: nothing is loaded until the first query.",
    )

    # Whether the policy needs `default_output` is the policy's rule (`infaas.policy.slo_miss`), which
    # the registry checks on create and on change (services/registry/service.py `check_slo_policy`).
    _output_is_finite = field_validator("default_output")(_finite_json)


class AppUpdate(Strict):
    """Fields of an app that may change; omitted fields stay as they are. `null` clears the defaults
    (latency, accuracy, output); the other fields always hold a value, so `null` there is a 422."""

    default_latency_ms: float | None = Field(None, gt=0, le=MAX_LATENCY_MS, allow_inf_nan=False)
    default_min_accuracy: float | None = Field(None, ge=0, le=1, allow_inf_nan=False)
    # Omitted means unchanged; SkipJsonSchema keeps `null` out of the documented types.
    slo_policy: SloPolicy | SkipJsonSchema[None] = None
    default_output: dict[str, list[Any]] | None = None
    cache: bool | SkipJsonSchema[None] = None
    prefer: Prefer | SkipJsonSchema[None] = None
    lossy: bool | SkipJsonSchema[None] = None
    criticality: Criticality | SkipJsonSchema[None] = None
    # The bounds on the int alone: on the union they would be applied to an explicit null (a TypeError).
    warm_instances: Annotated[StrictInt, Field(ge=0, le=MAX_WARM_INSTANCES)] | SkipJsonSchema[None] = None
    redundancy: Redundancy | SkipJsonSchema[None] = Field(
        None,
        description='Coded redundancy: `{"kind": "parity", "k": 2..4}` trains a parity model (ParM) for each '
        'of the app\'s models; `{"kind": "none"}` turns it off. Models that cannot have one are a 422.',
    )

    selection: Selection | SkipJsonSchema[None] = Field(
        None,
        description='Model selection (Clipper): `{"policy": "exp3" | "exp4", "models": [...]}` chooses among '
        "models with one task and output space and learns from `POST /v1/apps/{app}/feedback`; "
        '`{"policy": "single"}` turns it off. Models that cannot be selected among are a 422.',
    )

    _output_is_finite = field_validator("default_output")(_finite_json)

    @field_validator(
        "slo_policy", "cache", "prefer", "lossy", "criticality", "warm_instances", "redundancy", "selection"
    )
    @classmethod
    def _not_null(cls, value: object) -> object:
        # Runs only on values sent (defaults are not validated): an explicit null.
        if value is None:
            raise ValueError("cannot be null: omit the field to keep it as it is")
        return value


class ApiKeyInfo(BaseModel):
    """What is kept of an API key: never the key itself, only its first characters and its hash."""

    prefix: str = Field(description="The key's first 8 characters, to tell keys apart.")
    role: Literal["admin", "app"]
    created_at: datetime


class App(BaseModel):
    name: str
    default_latency_ms: float | None
    default_min_accuracy: float | None
    slo_policy: SloPolicy
    default_output: dict[str, list[Any]] | None = None
    cache: bool = True
    prefer: Prefer = "cost"
    lossy: bool = False
    criticality: Criticality = "normal"
    warm_instances: int = 1
    redundancy: Redundancy = Redundancy()
    selection: Selection = Selection()
    created_at: datetime
    models: list[str] = Field(default_factory=list)
    keys: list[ApiKeyInfo] = Field(default_factory=list, description="The app's API keys (prefixes only).")


class AppCreated(App):
    api_key: str = Field(description="The app's API key. Shown once: only its hash is stored.")


class ModelMetadata(Strict):
    name: str = Field(pattern=NAME_PATTERN)
    app: str = Field(pattern=NAME_PATTERN)
    task: str = Field("classification", pattern=r"^[a-z_]{1,32}$")


class TensorSpecOut(BaseModel):
    name: str
    dtype: str
    shape: list[int | None]


class SignatureOut(BaseModel):
    inputs: list[TensorSpecOut]
    outputs: list[TensorSpecOut]


class VariantProgress(BaseModel):
    total: int
    pending: int
    profiling: int
    ready: int
    failed: int


class Model(BaseModel):
    name: str
    app: str
    task: str
    format: str
    status: ModelStatus
    status_reason: str | None
    artifact_digest: str
    size_bytes: int
    validation_rows: int
    signature: SignatureOut
    progress: VariantProgress
    reference_accuracy: float | None = Field(
        None,
        description="Accuracy of the model as registered, measured on its validation set (its fp32 forms "
        "on CPU); a query that states no accuracy is answered only by variants at least this accurate "
        "unless its app is `lossy`. Null until measured.",
    )
    created_at: datetime
    updated_at: datetime


class ModelAccepted(Model):
    status_url: str


class LatencyPoint(BaseModel):
    batch: int
    p50_ms: float
    p99_ms: float
    memory_bytes: int | None = Field(
        default=None,
        description="Peak memory of the variant, measured in a fresh process, once batches up to this size "
        "have run: GPU memory (NVML) for a GPU variant, host memory otherwise.",
    )


class ConcurrencyPoint(BaseModel):
    """Batch-1 requests measured while `concurrency` of them run at once on one instance (SERF)."""

    concurrency: int
    p50_ms: float
    p99_ms: float
    qps: float = Field(description="Requests per second the `concurrency` loops completed together.")
    mean_ms: float | None = Field(
        None, description="Mean latency of one request; μ_i = 1000/mean_ms (None: profiled before SERF)."
    )
    requests: int | None = Field(None, description="Timed requests behind the point.")


class Variant(BaseModel):
    id: str
    model: str
    runtime: str
    provider: str
    artifact_digest: str = Field(description="The exact bytes that were profiled (model repository).")
    optimization: str
    precision: str
    hardware: str
    max_batch: int
    threads: int
    status: Literal["pending", "profiling", "ready", "failed"]
    status_reason: str | None
    accuracy: float | None
    load_ms: float | None
    latency: list[LatencyPoint] | None
    saturation_qps: float | None
    peak_memory_bytes: int | None
    interference: list[ConcurrencyPoint] | None = Field(
        None, description="Latency of 1…c concurrent batch-1 requests on one instance."
    )
    cost_per_s: float | None = Field(None, description="$ per second the instance's resources cost.")
    cost_per_query: float | None = Field(None, description="$ per row at saturation throughput.")
    dominated: bool = Field(
        False,
        description="Another variant is at least as good on every axis; kept, but skipped by selection.",
    )
    profiled_at: datetime | None


class VariantFilter(BaseModel):
    """Query parameters of `GET /v1/models/{name}/variants`."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    hardware: str | None = Field(None, description="Only this hardware kind (cpu, cuda, neuron).")
    status: Literal["pending", "profiling", "ready", "failed"] | None = None
    precision: str | None = Field(None, description="fp32, fp16, int8-dynamic, int8-static.")
    min_accuracy: float | None = Field(None, ge=0, le=1)
    max_latency_ms: float | None = Field(None, gt=0, description="p50 at `batch` at most this.")
    max_cost_per_query: float | None = Field(None, ge=0)
    include_dominated: bool = True
    batch: int = Field(1, ge=1, le=4096, description="Batch size the latency filter and sort use.")
    sort: Literal["latency", "accuracy", "cost", "throughput", "memory", "load"] = "latency"
    descending: bool = False


class HardwareKind(BaseModel):
    kind: str
    available: bool = Field(description="A worker or profiler that really has this hardware is live.")
    reason: str | None = Field(None, description="Why it is unavailable.")
    workers: int = Field(0, description="Live executors of this kind.")
    profilers: int = Field(0, description="Live profiler workers consuming this kind's queue.")
    price_per_hour: float = Field(description="$/h of one unit (vCPU, GPU or NeuronCore) in the price table.")


class Worker(BaseModel):
    id: str
    hardware: str
    url: str
    cores: int
    memory_bytes: int
    registered_at: datetime
    last_seen_at: datetime
    live: bool = False
    utilization: float | None = None
    instances: dict[str, str] = Field(default_factory=dict, description="variant id → instance state")


class WorkerRegistration(Strict):
    id: str = Field(pattern=r"^[A-Za-z0-9_.:-]{1,64}$")
    hardware: str
    url: str
    cores: int = Field(gt=0)
    memory_bytes: int = Field(gt=0)


class KeyVerify(Strict):
    key: str = Field(max_length=256)


class Principal(BaseModel):
    """Who a key belongs to: the admin, or one app."""

    role: Literal["admin", "app"]
    app: str | None = None


ADMIN = Principal(role="admin")
"""A service acting for the whole system (the planner's loops, the admin UI's reads): sees every app."""


class ModelInternal(BaseModel):
    """What the profiler and gateway need to know about a model."""

    id: int
    name: str
    app: str
    format: str
    status: ModelStatus
    artifact_digest: str
    onnx_digest: str | None = None
    torchscript_digest: str | None = None
    validation_digest: str
    signature: dict[str, Any]
    reference_accuracy: float | None = None
    """The model's accuracy as registered (see `Model.reference_accuracy`)."""
    task: str = "classification"


class AppInternal(BaseModel):
    """An app's defaults and models, as the gateway caches them."""

    name: str
    default_latency_ms: float | None
    default_min_accuracy: float | None
    slo_policy: SloPolicy
    default_output: dict[str, list[Any]] | None = None
    cache: bool = True
    prefer: Prefer = "cost"
    lossy: bool = False
    criticality: Criticality = "normal"
    warm_instances: int = 1
    redundancy: Redundancy = Redundancy()
    selection: Selection = Selection()
    models: list[ModelInternal]


class StatusUpdate(Strict):
    status: ModelStatus
    reason: str | None = None


class VariantReport(Strict):
    """A variant as the profiler reports it: pending, or measured."""

    id: str
    runtime: str
    provider: str = "CPUExecutionProvider"
    optimization: str
    precision: str
    hardware: str
    max_batch: int
    threads: int
    artifact_digest: str
    status: Literal["pending", "profiling", "ready", "failed"]
    status_reason: str | None = None
    accuracy: float | None = None
    load_ms: float | None = None
    latency: list[LatencyPoint] | None = None
    saturation_qps: float | None = None
    peak_memory_bytes: int | None = None
    interference: list[ConcurrencyPoint] | None = None
    cost_per_s: float | None = None
    cost_per_query: float | None = None
