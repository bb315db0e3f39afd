"""Wire schemas of pipelines (InferLine): a tree of stages over registered models, served against one
end-to-end P99 latency SLO; separate from the ORM row (`infaas.data.db.PipelineRow`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from infaas.schemas.api import MAX_LATENCY_MS, NAME_PATTERN, Strict

MAX_STAGES = 16
"""Bounds a pipeline: every stage is one dispatch per query, so a long chain is a latency mistake."""


class PipelineStage(Strict):
    name: str = Field(pattern=NAME_PATTERN, description="The stage's name, unique in its pipeline.")
    model: str = Field(pattern=NAME_PATTERN, description="A registered model of the pipeline's app.")
    min_accuracy: float | None = Field(
        None, ge=0, le=1, allow_inf_nan=False, description="Accuracy floor of this stage's variants."
    )


class BranchCondition(Strict):
    """Rows go on along a conditional edge when the class their source stage predicts (the argmax of
    `output`) is one of `classes` (e.g. only what a detector calls "vehicle" reaches the classifier)."""

    output: str = Field(min_length=1, max_length=128, description="An output of the edge's source stage.")
    classes: list[int] = Field(min_length=1, max_length=1024, description="Argmax classes that go on.")


class PipelineEdge(Strict):
    source: str = Field(pattern=NAME_PATTERN, description="Upstream stage.")
    target: str = Field(pattern=NAME_PATTERN, description="Downstream stage.")
    inputs: dict[str, str] = Field(
        min_length=1,
        max_length=64,
        description="How the source's output becomes the target's input: {target input: source output}.",
    )
    when: BranchCondition | None = Field(None, description="A conditional branch (None: every row).")


class PipelineCreate(Strict):
    name: str = Field(pattern=NAME_PATTERN, description="Unique pipeline name (also its OIP model name).")
    app: str = Field(pattern=NAME_PATTERN)
    slo_ms: float = Field(gt=0, le=MAX_LATENCY_MS, allow_inf_nan=False, description="End-to-end P99 SLO.")
    min_accuracy: float | None = Field(
        None, ge=0, le=1, allow_inf_nan=False, description="Accuracy floor of every stage without its own."
    )
    stages: list[PipelineStage] = Field(min_length=1, max_length=MAX_STAGES)
    edges: list[PipelineEdge] = Field(default_factory=list, max_length=MAX_STAGES)
    rate_qps: float | None = Field(
        None,
        gt=0,
        le=1_000_000,
        allow_inf_nan=False,
        description="Plan at registration for this arrival rate (None: plan on demand).",
    )
    cv: float = Field(1.0, gt=0, le=16, allow_inf_nan=False, description="CV of the planned arrivals.")


class StagePlan(BaseModel):
    """What the planner chose for one stage, and what it predicts."""

    stage: str
    variant: str
    hardware: str
    batch: int
    replicas: int
    scale: float = Field(description="s_m: share of the pipeline's queries that reach this stage.")
    cost_per_s: float


class PipelinePlan(BaseModel):
    stages: list[StagePlan]
    cost_per_s: float
    predicted_p99_ms: float
    rate_qps: float = Field(description="The arrival rate the plan was made for.")
    cv: float = Field(1.0, description="The CV of the gamma inter-arrivals it was made for.")
    feasible: bool
    reason: str
    planned_at: datetime | None = None


class Pipeline(BaseModel):
    name: str
    app: str
    slo_ms: float
    min_accuracy: float | None
    stages: list[PipelineStage]
    edges: list[PipelineEdge]
    order: list[str] = Field(description="The stages in the order a query runs them (root first).")
    plan: PipelinePlan | None = None
    created_at: datetime
    plan_error: dict[str, Any] | None = Field(
        None, description="Why the plan asked for at registration was not made (the pipeline is stored)."
    )

    def stage_floor(self, stage: PipelineStage) -> float | None:
        """The accuracy floor a stage states: its own, else the pipeline's (None: neither states one)."""
        return stage.min_accuracy if stage.min_accuracy is not None else self.min_accuracy

    def stage_accuracy(
        self, stage: PipelineStage, *, app_min_accuracy: float | None, lossy: bool
    ) -> tuple[float | None, bool]:
        """A stage's accuracy rule, as `(floor, at_reference)`: `stage_floor`, else its app's default.
        With none stated anywhere, only variants as accurate as their model as registered serve it
        (`at_reference`) unless the app is `lossy`: the rule a query's requirements get from its app
        (`_with_defaults` in gateway/dataplane/queries.py), so a plan never pins a lossy form of a model
        the pipeline names (an int8 wine classifier at half its accuracy, say)."""
        floor = self.stage_floor(stage)
        if floor is None:
            floor = app_min_accuracy
        return floor, floor is None and not lossy
