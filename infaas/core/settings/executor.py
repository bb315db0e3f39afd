"""Settings the executor (the worker) reads: its hardware, batching, push endpoint, heartbeats, pulses."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from infaas.core.settings.common import CommonSettings


class ExecutorSettings(CommonSettings):
    """Fields of an executor (`services/executor/`)."""

    executor_hardware: Literal["auto", "cpu", "cuda"] = "auto"
    """The hardware kind this executor serves; `auto`: CUDA on GPU `executor_device` when usable, else
    the CPU. Its worker id starts with the kind (`cuda-<host>-<port>`)."""

    executor_device: int = 0
    """The GPU (NVML/CUDA index) a CUDA executor runs its instances on."""

    worker_memory_bytes: int = 0
    """Memory the executor offers to instances; 0 means what the machine has. The planner's local
    provider starts its executors with it."""

    executor_push_port: int = 0
    """Port of an executor's push endpoint; 0 picks a free one (the address is in its heartbeat)."""

    push_local_socket: bool = True
    """An executor whose push address is a loopback one also listens on a Unix socket in
    `<var_dir>/run`, and a dispatcher with the same var dir connects through it instead of TCP: the same
    frames with less kernel work per query on both sides (`infaas.wire.local`). False: TCP only."""

    default_batch_budget_ms: float = Field(default=20.0, gt=0)
    """AIMD latency budget of a batch whose queries carry no SLO. The dispatcher's admission gate takes
    it as the budget of a query without one."""

    max_queue_delay_ms: float | None = Field(default=None, ge=0)
    """Executor: wait up to this long for more queries before running a short batch (Clipper's batch
    timeout; 0: never wait). Unset, each instance chooses its own wait from its profile, its offered
    load and its queries' budgets (`services.executor.batching.batch_delay`), reported in heartbeats."""

    executor_inline_ms: float | None = Field(default=None, ge=0)
    """Executor: batches whose profiled latency is at most this run on the event loop rather than the
    instance's thread. Unset: every batch when the executor may use one CPU core only, else 0.5 ms."""

    heartbeat_interval_s: float = Field(default=1.0, gt=0)
    """How often an executor reports its load and instances."""

    pulse_interval_s: float = Field(default=0.025, ge=0)
    """How often an executor sends its pulse (`infaas.data.pulses`), the fast liveness signal; 0 sends
    none (a failure is then noticed by the heartbeat's expiry, a dropped push connection, or the provider).
    The planner's failure watch counts missed pulses in these intervals."""

    interference_enter: float = 2.5
    """An instance whose batches take this many times their profiled latency is `interfered` (INFaaS's
    code: 2.5×); it is what pauses offline jobs for latency (`job_pause_states`)."""

    interference_exit: float = 1.5
    """…and it is `active` again below this factor (INFaaS: 1.5×)."""
