"""Settings of offline jobs: read by the registry (intake, chunking), the planner (throttle, leases)
and the jobs worker — the room `services/jobs/__init__.py` maps."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from infaas.core.settings.common import CommonSettings


class JobsSettings(CommonSettings):
    """Fields of offline jobs, whichever service of the jobs room reads them."""

    job_pause_utilization: float = 0.4
    """Offline jobs pause on a worker whose online utilization exceeds this (INFaaS: 40 %)."""

    job_resume_utilization: float = 0.3
    """…and resume there once it falls below this (the gap keeps jobs from flapping)."""

    job_pause_states: list[str] = Field(default_factory=lambda: ["interfered", "overloaded"])
    """Instance states that pause jobs on their worker: `interfered` is online latency above its profile."""

    job_max_in_flight: int = Field(default=2, ge=1)
    """Chunks leased to jobs workers at once (across all jobs)."""

    job_chunk_lease_s: float = Field(default=30.0, gt=0)
    """A leased chunk not finished within this is leased again (its worker died or its message was lost)."""

    job_chunk_seconds: float = Field(default=1.0, gt=0)
    """Default chunk size: about this much of the chosen variant's work at its profiled throughput."""

    job_tick_s: float = Field(default=0.5, gt=0)
    """How often the planner re-decides the throttle and leases chunks."""

    job_idle_tick_s: float = Field(default=10.0, gt=0)
    """With no job active, the planner asks the registry only when a submission was signalled in Redis
    (`infaas.jobs.protocol.SUBMITTED_KEY`) or this long after its last ask: an idle system makes no
    request and no database query twice a second."""

    job_max_rows: int = Field(default=10_000_000, ge=1)
    """Largest job input, in rows."""

    job_max_input_bytes: int = 1024 * 1024 * 1024
    """Largest job input file (uploaded, or expanded from a .npz)."""

    job_data_dir: Path | None = None
    """Where `input_path` / `output_path` of jobs live; default `<var_dir>/job-data`."""

    @property
    def resolved_job_data_dir(self) -> Path:
        return (self.job_data_dir or self.var_dir / "job-data").resolve()
