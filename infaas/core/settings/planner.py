"""Settings the planner reads: failure detection, failover, model and worker autoscaling, pipelines."""

from __future__ import annotations

from urllib.parse import urlsplit

from pydantic import Field

from infaas.core.settings.common import CommonSettings


class PlannerSettings(CommonSettings):
    """Fields of the planner's control loops (`services/planner/`); its job throttle reads `JobsSettings`."""

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

    failover_interval_s: float = Field(default=1.0, ge=0)
    """How often the failover loop re-plans warm backups and checks for workers gone from the snapshot
    (failure notices on `infaas:failures` are acted on at once); 0 turns failover off."""

    failover_alpha: float = Field(0.1, ge=0.0, le=1.0)
    """FailLite's α: share of the free capacity warm backups leave to cold (progressive) failover loads."""

    interference_migrate_s: float = Field(default=10.0, ge=0)
    """An instance `interfered` this long is re-placed on a less utilized worker of its kind (INFaaS
    §4.1; services/planner/policies/interference.py); 0 turns that off."""

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

    def pulse_host(self) -> str:
        """The host executors reach this planner's pulse socket by (`pulse_advertise_host`)."""
        if self.pulse_advertise_host:
            return self.pulse_advertise_host
        if self.host not in ("0.0.0.0", "::", ""):
            return self.host
        return urlsplit(self.service_url("planner")).hostname or "127.0.0.1"
