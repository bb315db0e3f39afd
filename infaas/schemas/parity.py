"""Wire schemas of coded redundancy (ParM parity models): an app's option and a parity model's training."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, model_validator

ParityState = Literal["queued", "training", "ready", "failed"]


class Redundancy(BaseModel):
    """An app's coded redundancy: `none`, or `parity` with coding groups of `k` queries (2..4)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["none", "parity"] = "none"
    k: StrictInt | None = Field(
        None,
        ge=2,
        le=4,
        description="Queries per coding group (parity only): one parity query per k, so 1/k more "
        "resources; larger k costs less and reconstructs less accurately.",
    )

    @model_validator(mode="after")
    def _k_with_parity_only(self) -> Redundancy:
        if self.kind == "parity" and self.k is None:
            raise ValueError("parity redundancy needs k (2..4)")
        if self.kind == "none" and self.k is not None:
            raise ValueError("k applies to parity redundancy only")
        return self


class ParityReport(BaseModel):
    """What a parity training reports to the registry (progress, then its result)."""

    model_config = ConfigDict(extra="forbid")

    generation: int = Field(ge=1, description="The training this report is of; an older one is a 409.")
    state: ParityState
    reason: str | None = None
    steps_done: int = Field(0, ge=0)
    steps_total: int = Field(0, ge=0)
    losses: list[tuple[int, float]] = Field(default_factory=list)
    metric: Literal["accuracy", "r2"] | None = None
    deployed_score: float | None = None
    degraded_score: float | None = None
    holdout_rows: int | None = None
    train_rows: int | None = None
    train_seconds: float | None = None
    artifact_digest: str | None = None


class ParityStatus(BaseModel):
    """A model's parity model: its training's progress and loss curve, and its degraded-mode score."""

    model: str
    k: int
    generation: int
    state: ParityState
    reason: str | None
    steps_done: int
    steps_total: int
    losses: list[tuple[int, float]] = Field(description="[(step, mean MSE over the steps since the last)]")
    metric: Literal["accuracy", "r2"] | None = Field(
        description="accuracy for classification, R² for regression"
    )
    deployed_score: float | None = Field(description="The deployed model's score on the held-out rows.")
    degraded_score: float | None = Field(
        description="Degraded-mode score: of outputs reconstructed from the parity model and the other k−1 "
        "members' outputs, on the same held-out rows (never trained on)."
    )
    holdout_rows: int | None
    train_rows: int | None
    train_seconds: float | None
    artifact_digest: str | None = Field(description="The parity model's ONNX artifact, once trained.")
    updated_at: datetime
