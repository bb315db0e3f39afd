"""Wire schemas of the Open Inference Protocol v2 (KServe / Triton REST) as this gateway speaks it.

The inference request is parsed by hand (it may carry binary tensors after its JSON); these models
document it in the OpenAPI and type the metadata answers.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from infaas.clients.envelope import oip_parameters_schema

Datatype = Literal[
    "BOOL",
    "UINT8",
    "UINT16",
    "UINT32",
    "UINT64",
    "INT8",
    "INT16",
    "INT32",
    "INT64",
    "FP16",
    "FP32",
    "FP64",
    "BYTES",
]
ParameterValue = bool | int | float | str


class ServerLive(BaseModel):
    live: bool


class ServerReady(BaseModel):
    ready: bool


class ServerMetadata(BaseModel):
    name: str
    version: str
    extensions: list[str]


class MetadataTensor(BaseModel):
    name: str
    datatype: Datatype
    shape: list[int] = Field(description="-1 for a dynamic dimension (the first one is the batch).")


class ModelMetadataParameters(BaseModel):
    kind: Literal["model", "app"] = Field(
        description="`model`: a named model; `app`: a model-less target, the system picks model and variant."
    )
    app: str
    models: list[str] = Field(
        description="The models that may answer: the model itself, or the app's models."
    )
    status: str = Field(
        description="Model status (registered, profiling, ready, failed); `ready` for an app "
        "with at least one ready model."
    )


class ModelMetadata(BaseModel):
    name: str
    versions: list[str] = Field(default_factory=list)
    platform: str
    inputs: list[MetadataTensor]
    outputs: list[MetadataTensor]
    parameters: ModelMetadataParameters


class ModelReady(BaseModel):
    name: str
    ready: bool


class TensorParameters(BaseModel):
    model_config = ConfigDict(extra="allow")

    binary_data_size: int | None = Field(
        None, ge=0, description="Binary tensor extension: this many bytes of the data follow the JSON."
    )


class RequestInput(BaseModel):
    name: str
    shape: list[int]
    datatype: Datatype
    parameters: TensorParameters | None = None
    data: list[Any] | None = Field(
        None, description="Row-major elements (flat or nested); omitted when binary."
    )


class RequestedOutputParameters(BaseModel):
    binary_data: bool = Field(False, description="Answer this output as binary data after the JSON.")


class RequestOutput(BaseModel):
    name: str
    parameters: RequestedOutputParameters | None = None


InferenceRequestParameters = oip_parameters_schema(
    "InferenceRequestParameters",
    "Requirements of the query (model-less on an app, or on a named model) and answer options.",
    binary_data_output=(bool | None, Field(None, description="Answer every output as binary data.")),
)
"""The query fields the protocol takes (`infaas.clients.envelope.QUERY_FIELDS`) and its own option."""

InferenceRequest: type[BaseModel] = create_model(  # published in the OpenAPI document; parsed by hand
    "InferenceRequest",
    id=(str | None, Field(None, description="Echoed in the answer.")),
    parameters=(InferenceRequestParameters | None, None),  # type: ignore[arg-type]
    inputs=(list[RequestInput], ...),
    outputs=(
        list[RequestOutput] | None,
        Field(None, description="Which outputs to answer; all when omitted."),
    ),
)


class InferenceResponseParameters(BaseModel):
    """What the system did: the variant it chose, on which worker, how long each step took, and why."""

    model: str = Field(description="The model that answered (for an app: the one the system chose).")
    variant: str
    worker: str
    hardware: str
    slo_met: bool | None = Field(None, description="Omitted when the query had no latency SLO.")
    queue_ms: float
    compute_ms: float
    total_ms: float
    cached: bool
    default: bool
    reason: str
    request_id: str


class ResponseOutput(BaseModel):
    name: str
    shape: list[int]
    datatype: Datatype
    parameters: TensorParameters | None = None
    data: list[Any] | None = Field(None, description="Row-major elements; omitted when binary.")


class InferenceResponse(BaseModel):
    model_name: str = Field(description="The target as requested: a model or an app.")
    model_version: str | None = None
    id: str | None = None
    parameters: InferenceResponseParameters
    outputs: list[ResponseOutput]


class ErrorResponse(BaseModel):
    """The protocol's error shape: a message, plus this system's error code and details."""

    error: str
    code: str | None = None
    details: dict[str, Any] | None = None


OIP_SCHEMAS = (InferenceRequest,)
