"""Wire schemas of offline jobs: the public `/v1/jobs` API and the registry's internal job routes."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field, model_validator

from infaas.schemas.api import NAME_PATTERN, Strict

JobState = Literal["queued", "running", "paused", "succeeded", "failed", "cancelled"]
TERMINAL_STATES: frozenset[str] = frozenset({"succeeded", "failed", "cancelled"})
ChunkState = Literal["pending", "leased", "done", "failed"]
PATH_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_./-]{0,200}$"


class JobSubmit(Strict):
    """What a job asks for (the multipart field `metadata` of `POST /v1/jobs`)."""

    app: str | None = Field(
        None, pattern=NAME_PATTERN, description="The app whose models may serve it (model-less job)."
    )
    model: str | None = Field(None, pattern=NAME_PATTERN, description="A model named explicitly.")
    min_accuracy: float | None = Field(
        None, ge=0, le=1, description="Minimum accuracy; default: the app's default minimum accuracy."
    )
    input_path: str | None = Field(
        None,
        pattern=PATH_PATTERN,
        description="Instead of an upload: a `.npy`/`.npz` under the job data store (`job_data_dir`).",
    )
    output_path: str | None = Field(
        None,
        pattern=PATH_PATTERN,
        description="Also write the result `.npz` here, under the job data store, when the job succeeds.",
    )
    chunk_rows: int | None = Field(
        None, ge=1, description="Rows per chunk; default: about one second of the chosen variant's work."
    )
    task: Literal["classification", "regression"] | None = Field(
        None,
        description="Run on a model of this task; needed by a model-less job only where the app has "
        "models of several tasks that take its input (as for model-less queries).",
    )

    @model_validator(mode="after")
    def _app_or_model(self) -> JobSubmit:
        if not self.app and not self.model:
            raise ValueError("name an app (model-less) or a model")
        for path in (self.input_path, self.output_path):
            if path is not None and ".." in path.split("/"):
                raise ValueError("paths may not contain '..'")
        return self


class JobDecision(BaseModel):
    """Which variant runs the job and why (throughput per cost, not latency)."""

    variant: str
    model: str
    accuracy: float
    throughput_rows_s: float = Field(description="Profiled saturation throughput of the variant.")
    cost_per_million_rows: float = Field(description="$ per million rows at that throughput.")
    max_batch: int
    reason: str
    considered: int = Field(description="Ready variants considered.")


class JobError(BaseModel):
    chunk: int | None
    message: str
    fatal: bool
    at: datetime


class Job(BaseModel):
    """An offline job and its progress."""

    id: str
    app: str
    model: str
    variant: str | None
    state: JobState
    reason: str | None = Field(description="Why the job is in its state (pauses say what was too busy).")
    rows_total: int
    rows_done: int
    chunks_total: int
    chunks_done: int
    chunk_rows: int
    progress: float = Field(description="rows_done / rows_total")
    throughput_rows_s: float | None = Field(description="Rows per second since the job started.")
    eta_s: float | None = Field(description="Seconds left at the current throughput.")
    errors: list[JobError]
    decision: JobDecision | None
    input_source: str
    output_path: str | None
    result_url: str | None = Field(description="Where to download the output `.npz` once succeeded.")
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


# --- internal: planner and jobs worker ↔ registry -------------------------------------------------


class JobsTick(Strict):
    """The planner's throttle decision, and how many chunks it wants running at most."""

    paused: bool
    reason: str
    max_in_flight: int = Field(ge=0)
    lease_s: float = Field(gt=0)


class ChunkRef(BaseModel):
    job_id: str
    index: int


class JobsTickResult(BaseModel):
    leased: list[ChunkRef]
    active_jobs: int
    in_flight: int


class ChunkTask(BaseModel):
    """What a jobs worker needs to run one chunk."""

    job_id: str
    index: int
    row_start: int
    row_end: int
    state: ChunkState
    job_state: JobState
    variant: str
    inputs: dict[str, str] = Field(description="input name -> digest of its `.npy` in the artifact store")
    output_names: list[str]


class ChunkDone(Strict):
    output_digest: str = Field(pattern=r"^[0-9a-f]{64}$")
    worker: str = Field(max_length=64)


class ChunkDoneResult(BaseModel):
    newly_done: bool = Field(description="False when another run had already finished this chunk.")
    job_state: JobState


class ChunkRelease(Strict):
    """Give a chunk back (transient trouble): it runs again later, nothing is counted as done."""

    reason: str = Field(max_length=500)
    fatal: bool = Field(False, description="Fail the chunk and the job instead (deterministic error).")
    quiet: bool = Field(False, description="Not an error (the throttle paused jobs): keep it off the list.")
