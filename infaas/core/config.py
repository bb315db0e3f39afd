"""Settings shared by every service: one `Settings` read from `INFAAS_*` environment variables.

Nothing reads the environment at import time; services build their app from `get_settings()` or from a
`Settings` handed to their factory (tests do the latter).
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from infaas.core.costs import PriceTable

SERVICES: tuple[str, ...] = ("gateway", "registry", "scheduler", "executor", "planner", "profiler")


class Settings(BaseSettings):
    """Configuration of an infaas deployment (every field can be set as `INFAAS_<FIELD>`)."""

    model_config = SettingsConfigDict(env_prefix="INFAAS_", extra="ignore")

    var_dir: Path = Path("var")
    """Where local state lives: SQLite database, artifacts, embedded Redis, cached demo models."""

    database_url: str = ""
    """SQLAlchemy URL of the metadata database; empty means SQLite at `<var_dir>/infaas.db`."""

    redis_url: str = ""
    """Redis URL of the metadata store, query streams and Celery broker. Empty is only valid for the
    launcher, which then starts an embedded Redis server and hands its URL to every process."""

    artifact_dir: Path | None = None
    """Model repository directory (content addressed); default `<var_dir>/artifacts`."""

    artifact_source: Literal["local", "registry"] = "local"
    """Where executors, profilers and job workers get artifacts. `local`: `artifact_dir` is the model
    repository itself (one machine, or a volume shared with the registry). `registry`: `artifact_dir` is
    this machine's cache, filled by digest from the registry and verified (no shared volume). The
    registry always keeps the repository in its own `artifact_dir`."""

    admin_key: str = ""
    """Admin API key. Empty: the launcher generates one on first start and keeps it in `<var_dir>`."""

    internal_key: str = ""
    """Shared secret of the suite's own services: every internal request carries it (`x-infaas-internal`),
    and push connections open with it. Empty: `infaas run` generates one on first start and keeps it in
    `<var_dir>`; a service started with none refuses every internal request."""

    auth_failures_per_minute: int = 30
    """Failed key verifications the gateway takes from one client address per minute (a burst of as
    many, refilled evenly); beyond that it answers 429 with `Retry-After` to every keyed request from it."""

    host: str = "127.0.0.1"
    """Bind address of internal services (loopback by default: only the gateway is public)."""

    gateway_host: str = "0.0.0.0"
    """Bind address of the gateway, the single public port."""

    gateway_port: int = 8080
    registry_port: int = 8081
    scheduler_port: int = 8082
    executor_port: int = 8083
    executors: int = 1
    """How many CPU executor processes `infaas run` starts (`executor_ports`: consecutive from
    executor_port, stepping over the other services' ports)."""

    gpu_executors: int | None = None
    """How many CUDA executors `infaas run` starts after the CPU ones: one per GPU when unset (GPU i
    for the i-th), none on a machine without a usable GPU."""

    executor_hardware: Literal["auto", "cpu", "cuda"] = "auto"
    """The hardware kind this executor serves; `auto`: CUDA on GPU `executor_device` when usable, else
    the CPU. Its worker id starts with the kind (`cuda-<host>-<port>`)."""

    executor_device: int = 0
    """The GPU (NVML/CUDA index) a CUDA executor runs its instances on."""
    planner_port: int = 8084
    profiler_metrics_port: int = 8085

    registry_url: str = ""
    """Base URL of the registry; default `http://127.0.0.1:<registry_port>`."""
    scheduler_url: str = ""
    """Base URL of the scheduler; default `http://127.0.0.1:<scheduler_port>`."""
    scheduler_mode: Literal["embedded", "remote"] = "embedded"
    """`embedded`: each gateway process runs the scheduler's dispatcher itself (one HTTP hop less per
    query; see docs/benchmarks.md); `remote`: the gateway calls the scheduler service over HTTP."""
    executor_mode: Literal["remote", "embedded"] = "remote"
    """`remote`: every executor is a process of its own; `embedded`: the gateway process hosts the
    first CPU executor (its own port, API, heartbeats and pulses) and hands it query frames by a function
    call instead of a socket (`infaas.wire.loopback`): two process wake-ups less per query it serves
    (docs/benchmarks.md). The price: a model that crashes its process takes the gateway down with it
    (the supervisor starts both again), where a separate executor's crash costs a re-send."""
    dispatch: Literal["push", "streams"] = "push"
    """How the dispatcher hands queries to executors: `push` sends each frame over a persistent TCP
    connection to the chosen instance's worker and reads the answer back on it (four process wake-ups
    per query); `streams` appends it to the variant's Redis stream for whichever worker pulls it and
    takes the answer from a reply channel (eight). Executors serve both at once."""
    executor_push_port: int = 0
    """Port of an executor's push endpoint; 0 picks a free one (the address is in its heartbeat)."""
    push_local_socket: bool = True
    """An executor whose push address is a loopback one also listens on a Unix socket in
    `<var_dir>/run`, and a dispatcher with the same var dir connects through it instead of TCP: the same
    frames with less kernel work per query on both sides (`infaas.wire.local`). False: TCP only."""
    planner_url: str = ""
    """Base URL of the planner; default `http://127.0.0.1:<planner_port>`."""

    executor_advertise_url: str = ""
    """URL other services use to reach this executor; default `http://127.0.0.1:<executor_port>`."""

    max_request_bytes: int = Field(default=16 * 1024 * 1024, gt=0)
    """Largest query body the gateway accepts (413 above)."""

    max_model_bytes: int = 512 * 1024 * 1024
    """Largest model or validation file the registry accepts (413 above)."""

    max_validation_expanded_bytes: int = 256 * 1024 * 1024
    """Largest size a validation `.npz` may expand to, read from the sizes it declares before anything is
    decompressed (422 above; so is an archive above 16 MiB expanded that expands more than 64 times its
    size: `infaas.wire.archives`)."""

    max_query_rows: int = Field(default=1024, ge=1)
    """Largest batch one online query may carry (422 above)."""

    query_timeout_s: float = Field(default=30.0, gt=0)
    """Hard limit a query waits for a worker, cold loads included, before the scheduler gives up."""

    cache_bytes: int = Field(default=64 * 1024 * 1024, ge=0)
    """Memory bound of each scheduler's prediction cache."""

    max_pending_queries: int = Field(default=2048, gt=0)
    """Queries one scheduler holds in flight before it sheds with 503 + Retry-After."""

    app_max_pending: int = Field(default=1024, gt=0)
    """Queries one app may have in flight before it gets 429 + Retry-After."""

    queue_limit_s: float = Field(default=0.5, gt=0)
    """Per variant, at most this many seconds of work (at its profiled saturation rate) queued."""

    default_batch_budget_ms: float = Field(default=20.0, gt=0)
    """AIMD latency budget of a batch whose queries carry no SLO."""

    max_queue_delay_ms: float | None = Field(default=None, ge=0)
    """Executor: wait up to this long for more queries before running a short batch (Clipper's batch
    timeout; 0: never wait). Unset, each instance chooses its own wait from its profile, its offered
    load and its queries' budgets (`services.executor.batching.batch_delay`), reported in heartbeats."""

    executor_inline_ms: float | None = Field(default=None, ge=0)
    """Executor: batches whose profiled latency is at most this run on the event loop rather than the
    instance's thread. Unset: every batch when the executor may use one CPU core only, else 0.5 ms."""

    heartbeat_interval_s: float = Field(default=1.0, gt=0)
    """How often an executor reports its load and instances."""

    heartbeat_ttl_s: float = Field(default=5.0, gt=0)
    """A worker whose heartbeat is older than this is considered gone."""

    pulse_interval_s: float = Field(default=0.025, ge=0)
    """How often an executor sends its pulse (`infaas.data.pulses`), the fast liveness signal; 0 sends
    none (a failure is then noticed by the heartbeat's expiry, a dropped push connection, or the provider)."""

    pulse_misses: int = Field(default=2, ge=1)
    """A worker whose pulses stopped for this many intervals, while the channel carried others, is silent:
    failed if a connection to its port is refused or unanswered (`infaas.policy.failure_detection`)."""

    pulse_hung_s: float = Field(default=0.5, ge=0)
    """A silent worker whose port still accepts connections (a process paused on a loaded machine) is
    failed only once it stays silent this long after the first probe that found its port accepting:
    hung."""

    pulse_advertise_host: str = ""
    """The host executors send a planner's pulses to (UDP, on `planner_port` where it is free, else any
    port: the address is advertised in Redis). Default: `host` (the internal bind address) unless that
    is a wildcard, then the host of `planner_url`. Set it to the pod's IP where several planners share
    one Service name."""

    auth_cache_ttl_s: float = Field(default=10.0, ge=0)
    """How long the gateway trusts a verified key (and a known model signature) before asking again."""

    auth_cache_keep_warm_s: float = Field(default=300.0, ge=0)
    """A key, app, model or pipeline a query used within this long is re-verified in the background
    before its `auth_cache_ttl_s` runs out, so that an app sending a query every minute does not wait
    for the registry on each one. 0: reloaded only when a query finds it old or expired."""

    profile_batch_sizes: list[int] = Field(default_factory=lambda: [1, 4, 16, 64])
    """Max batch sizes of the generated variants."""

    profile_threads: list[int] = Field(default_factory=list)
    """Intra-op thread counts of the generated CPU variants; empty means 1, 2, 4, … up to the cores."""

    profile_seconds_per_point: float = 0.25
    """Measuring time per (session, batch size) point after warm-up."""

    profile_min_iterations: int = 30
    """At least this many timed runs per point, whatever the time."""

    price_cpu_vcpu_hour: float = 0.048
    """$ per vCPU-hour (default: AWS m5.large on-demand, us-east-1)."""

    price_gpu_hour: float = 0.526
    """$ per GPU-hour (default: AWS g4dn.xlarge, one T4, on-demand, us-east-1)."""

    price_neuron_core_hour: float = 0.057
    """$ per NeuronCore-hour (default: AWS inf1.xlarge $0.228/h over 4 NeuronCores)."""

    profile_interference_max: int = 4
    """Profile the latency of 1…min(this, cores) concurrent requests (the SERF interference profile)."""

    profile_concurrency_requests: int = Field(10, ge=2)
    """Timed requests per concurrency level of that profile (SERF: ~10; requests of one model are
    near-deterministic, so a few give the mean service rate μ_i)."""

    calibration_rows: int = 200
    """Validation rows used to calibrate int8 static quantization."""

    worker_memory_bytes: int = 0
    """Memory the executor offers to instances; 0 means what the machine has."""

    interference_enter: float = 2.5
    """An instance whose batches take this many times their profiled latency is `interfered` (INFaaS's
    code: 2.5×); it is what pauses offline jobs for latency (`job_pause_states`)."""

    interference_exit: float = 1.5
    """…and it is `active` again below this factor (INFaaS: 1.5×)."""

    interference_migrate_s: float = Field(default=10.0, ge=0)
    """An instance `interfered` this long is re-placed on a less utilized worker of its kind (INFaaS
    §4.1; services/planner/policies/interference.py); 0 turns that off."""

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

    failover_interval_s: float = Field(default=1.0, ge=0)
    """How often the failover loop re-plans warm backups and checks for workers gone from the snapshot
    (failure notices on `infaas:failures` are acted on at once); 0 turns failover off."""

    failover_alpha: float = Field(0.1, ge=0.0, le=1.0)
    """FailLite's α: share of the free capacity warm backups leave to cold (progressive) failover loads."""

    autoscale_policy: str = "greedy"
    """Model autoscaler: `greedy` (INFaaS §4.2.2), `ilp` (the exact ILP on HiGHS), `horizontal` (replicas
    of the running variants only: the SM+ baseline) or `off`."""

    autoscale_interval_s: float = Field(default=1.0, gt=0)
    """How often the model autoscaler decides (INFaaS: 1 s)."""

    pipeline_tune_interval_s: float = Field(default=1.0, ge=0)
    """How often the pipeline tuner (InferLine) checks planned pipelines' traffic against their planned
    envelopes and scales their stages; 0 turns it off."""

    events_retention_days: float = 30.0
    """Scaling events older than this are deleted by the planner (hourly); 0 keeps them forever."""

    slack_threshold: float = 1.05
    """Minimum headroom (capacity / load) the model autoscaler keeps per model (INFaaS: 1.05)."""

    autoscale_lambda: float = 1.0
    """λ (1/s) of the ILP cost: weight of a variant's loading time against its hardware cost."""

    scale_down_min_s: float = Field(default=5.0, ge=0)
    """Floor under T_v, the wait before a scale-down (T_v is the variant's load latency)."""

    scale_keep_loaded_s: float = Field(default=30.0, ge=0)
    """An instance younger than this is never removed or downgraded away: whoever loaded it (a scale-up,
    or a query with nothing else to run on) needed it moments ago. The one owner of an instance's first
    seconds, so the scheduler's loads and the planner's removals cannot fight."""

    scale_up_miss_share: float = Field(default=0.05, gt=0, le=1)
    """Share of a model's queries shed or late in the window above which it scales up even when the
    capacity estimate says it fits (the estimate is wrong then), provided its instances are busy."""

    scale_settle_s: float = Field(default=3.0, ge=0)
    """After an instance of a model appears, its misses are not a reason to scale up again for this long:
    the window still holds the queries from before it."""

    worker_provider: str = "none"
    """Worker autoscaler backend: `none`, `local` (executor processes here) or `kubernetes`."""

    kubernetes_worker_kinds: list[str] = ["cpu"]
    """Hardware kinds the Kubernetes provider scales, each an executor Deployment `infaas-executor-<kind>`
    that must exist (deploy/kubernetes/executor.yaml has `cpu` and `cuda`; its planner sets both)."""

    worker_autoscale_interval_s: float = Field(default=2.0, gt=0)
    """How often the worker autoscaler decides (INFaaS: 2 s)."""

    min_workers: int = Field(default=1, ge=0)
    """The worker autoscaler never goes below this many workers per hardware kind in use."""

    max_workers: int = Field(default=8, ge=1)
    """… nor above this many per hardware kind."""

    worker_idle_s: float = Field(default=60.0, gt=0)
    """A worker with no instance (or no load) for this long is drained and removed."""

    log_level: str = "info"

    ui_session_ttl_s: float = Field(default=8 * 3600, gt=0)
    """Lifetime of an admin UI session from sign-in (kept in Redis; the cookie's Max-Age too): after it,
    or after signing out, the browser is sent back to sign in."""
    ui_load_sample_s: float = Field(default=5.0, ge=0)
    """How often each gateway process samples the serving processes' metrics for the admin UI's load
    charts (0: never; the load page then shows only its own window)."""
    ui_load_history_s: float = Field(default=600.0, gt=0)
    """How far back the load charts reach: the in-memory ring holds this many seconds of samples."""

    parity_train_steps: int = Field(default=1500, ge=1, le=1_000_000)
    """Steps (batches of 64 k-tuples) a parity model is trained for: enough for the small models served
    here to come within a few points of their accuracy in degraded mode (docs/benchmarks.md)."""

    profile_lease_ttl_s: float = Field(default=5.0, gt=0)
    """A profiler holds a lease on the model it profiles (a Redis key with this TTL, renewed while it
    works); a profiler that died stops renewing, and the key is gone at most this long after."""

    profile_lease_renew_s: float = Field(default=1.0, gt=0)
    """How often the profiler renews its lease (and re-creates it if Redis lost it)."""

    profile_lease_grace_s: float = Field(default=5.0, ge=0)
    """How long a claimed model's lease must stay missing before the registry profiles it again: longer
    than a renewal plus a Redis reconnect, so Redis restarted empty does not look like a dead profiler."""

    profile_queued_max_s: float = Field(default=600.0, gt=0)
    """A model queued this long that no profiler took, while no profiler is busy with any model, is
    queued again: its task was lost (Redis restarted empty) or no profiler was running."""

    profile_max_attempts: int = Field(default=3, ge=1)
    """Profiling a model is tried at most this many times in a row; then the model is `failed`."""

    profile_sweep_interval_s: float = Field(default=1.0, gt=0)
    """How often the registry looks for profiles whose profiler is gone."""

    auth_stale_max_s: float = Field(default=300.0, ge=0)
    """While the registry cannot be reached (refused, timed out, 5xx), the gateway still answers with a
    key, app or model the registry confirmed at most this long ago (past `auth_cache_ttl_s`), and says
    so in `x-infaas-stale-auth`; a key never seen, or answered unknown, is not served. 0: never stale."""

    @field_validator("database_url")
    @classmethod
    def _normalize_dsn(cls, value: str) -> str:
        # Bare postgres:// URLs would pick psycopg2, which we do not ship.
        for prefix in ("postgres://", "postgresql://"):
            if value.startswith(prefix):
                return "postgresql+psycopg://" + value[len(prefix) :]
        return value

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.var_dir / 'infaas.db').resolve()}"

    @property
    def prices(self) -> PriceTable:
        return PriceTable(
            cpu_vcpu_hour=self.price_cpu_vcpu_hour,
            gpu_hour=self.price_gpu_hour,
            neuron_core_hour=self.price_neuron_core_hour,
        )

    @property
    def resolved_artifact_dir(self) -> Path:
        return (self.artifact_dir or self.var_dir / "artifacts").resolve()

    @property
    def resolved_job_data_dir(self) -> Path:
        return (self.job_data_dir or self.var_dir / "job-data").resolve()

    def service_url(self, service: str) -> str:
        """Base URL of an internal service, explicit setting first."""
        explicit = {
            "registry": self.registry_url,
            "scheduler": self.scheduler_url,
            "planner": self.planner_url,
            "executor": self.executor_advertise_url,
        }.get(service, "")
        if explicit:
            return explicit.rstrip("/")
        return f"http://127.0.0.1:{self.port(service)}"

    def pulse_host(self) -> str:
        """The host executors reach this planner's pulse socket by (`pulse_advertise_host`)."""
        if self.pulse_advertise_host:
            return self.pulse_advertise_host
        if self.host not in ("0.0.0.0", "::", ""):
            return self.host
        return urlsplit(self.service_url("planner")).hostname or "127.0.0.1"

    def executor_ports(self, count: int) -> list[int]:
        """The ports of `infaas run`'s first `count` executors: executor_port, then the next ports up that
        no other service of the suite is configured on (with the defaults, a second executor on 8084
        would take the planner's port, and the planner would fail to start)."""
        others = {self.port(s) for s in ("gateway", "registry", "scheduler", "planner", "profiler")}
        ports = [self.executor_port]
        candidate = self.executor_port + 1
        while len(ports) < count:
            if candidate not in others:
                ports.append(candidate)
            candidate += 1
        return ports[:count]

    def port(self, service: str) -> int:
        ports = {
            "gateway": self.gateway_port,
            "registry": self.registry_port,
            "scheduler": self.scheduler_port,
            "executor": self.executor_port,
            "planner": self.planner_port,
            "profiler": self.profiler_metrics_port,
        }
        return ports[service]

    def require_redis(self) -> str:
        if not self.redis_url:
            raise RuntimeError(
                "INFAAS_REDIS_URL is not set: start services with `infaas run`, which provides an embedded "
                "Redis, or point them at a Redis server"
            )
        return self.redis_url

    def child_env(self) -> dict[str, str]:
        """Environment for child processes: every setting, resolved, so they all agree with us."""
        env = dict(os.environ)
        for name, value in self.model_dump(mode="json").items():
            if value is None:
                continue
            env[f"INFAAS_{name.upper()}"] = value if isinstance(value, str) else json.dumps(value)
        env.update(
            {
                "INFAAS_VAR_DIR": str(self.var_dir.resolve()),
                "INFAAS_DATABASE_URL": self.resolved_database_url,
                "INFAAS_ARTIFACT_DIR": str(self.resolved_artifact_dir),
            }
        )
        return env


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """Settings of this process, read once from the environment."""
    return Settings()
