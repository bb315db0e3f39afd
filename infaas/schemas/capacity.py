"""Wire schemas of `GET /v1/models/{name}/variants/{id}/capacity`: a variant's latency-vs-load curve
predicted by SERF's queueing model (`infaas/policy/serf.py`), next to the points it was profiled at."""

from __future__ import annotations

from pydantic import BaseModel, Field

from infaas.schemas.api import MAX_LATENCY_MS, ConcurrencyPoint


class CapacityQuery(BaseModel):
    """Query parameters of the capacity route."""

    slo_ms: float | None = Field(
        None, gt=0, le=MAX_LATENCY_MS, description="Latency SLO: report the highest rate meeting it."
    )
    points: int = Field(24, ge=2, le=200, description="Arrival rates per curve, from 0 to 98 % of ρ = 1.")


class LoadPoint(BaseModel):
    arrival_rps: float
    utilization: float = Field(description="ρ = λ/(c·μ_c).")
    latency_ms: float = Field(description="Predicted mean latency W ≈ S + W_q.")
    service_ms: float = Field(description="Mean service time S, slowed by concurrent requests.")
    wait_ms: float = Field(description="Mean queueing delay W_q (Cosmetatos-corrected M/M/c).")


class ConfigurationCurve(BaseModel):
    concurrency: int = Field(description="c: requests the instance runs at once.")
    threads: int = Field(description="Threads per request (the variant's).")
    cost_per_s: float | None = Field(description="$ per second of one instance of this configuration.")
    saturation_rps: float = Field(
        description="c·μ_c: the arrival rate at which the queue grows without bound."
    )
    slo_rps: float | None = Field(description="Highest arrival rate whose predicted mean meets `slo_ms`.")
    curve: list[LoadPoint]


class VariantCapacity(BaseModel):
    model: str
    variant: str
    hardware: str
    threads: int
    max_batch: int
    slo_ms: float | None
    service_rates: list[float] = Field(description="μ_i (requests/s of one request while i run), i = 1..c.")
    measured: list[ConcurrencyPoint] = Field(description="The profiled points the rates come from.")
    configurations: list[ConfigurationCurve]
    best: int | None = Field(
        description="Concurrency carrying the most `slo_rps` per $ (None: no SLO given).",
    )
