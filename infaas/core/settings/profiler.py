"""Settings the profiler reads: which variants to generate, how long to measure, parity training."""

from __future__ import annotations

from pydantic import Field

from infaas.core.settings.common import CommonSettings


class ProfilerSettings(CommonSettings):
    """Fields of the profiler workers (`services/profiler/`)."""

    profile_batch_sizes: list[int] = Field(default_factory=lambda: [1, 4, 16, 64])
    """Max batch sizes of the generated variants."""

    profile_threads: list[int] = Field(default_factory=list)
    """Intra-op thread counts of the generated CPU variants; empty means 1, 2, 4, … up to the cores."""

    profile_seconds_per_point: float = 0.25
    """Measuring time per (session, batch size) point after warm-up."""

    profile_min_iterations: int = 30
    """At least this many timed runs per point, whatever the time."""

    profile_interference_max: int = 4
    """Profile the latency of 1…min(this, cores) concurrent requests (the SERF interference profile)."""

    profile_concurrency_requests: int = Field(10, ge=2)
    """Timed requests per concurrency level of that profile (SERF: ~10; requests of one model are
    near-deterministic, so a few give the mean service rate μ_i)."""

    calibration_rows: int = 200
    """Validation rows used to calibrate int8 static quantization."""

    parity_train_steps: int = Field(default=1500, ge=1, le=1_000_000)
    """Steps (batches of 64 k-tuples) a parity model is trained for: enough for the small models served
    here to come within a few points of their accuracy in degraded mode (docs/benchmarks.md)."""

    profile_lease_ttl_s: float = Field(default=5.0, gt=0)
    """A profiler holds a lease on the model it profiles (a Redis key with this TTL, renewed while it
    works); a profiler that died stops renewing, and the key is gone at most this long after."""

    profile_lease_renew_s: float = Field(default=1.0, gt=0)
    """How often the profiler renews its lease (and re-creates it if Redis lost it)."""
