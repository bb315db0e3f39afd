"""Settings `infaas run` reads to compose the suite on one machine, and what it hands its children."""

from __future__ import annotations

import json
import os
from typing import Literal

from infaas.core.settings.common import CommonSettings


class SuiteSettings(CommonSettings):
    """Fields of the launcher (`infaas run`, `infaas serve`): which processes, on which ports."""

    executors: int = 1
    """How many CPU executor processes `infaas run` starts (`executor_ports`: consecutive from
    executor_port, stepping over the other services' ports)."""

    gpu_executors: int | None = None
    """How many CUDA executors `infaas run` starts after the CPU ones: one per GPU when unset (GPU i
    for the i-th), none on a machine without a usable GPU."""

    executor_mode: Literal["remote", "embedded"] = "remote"
    """`remote`: every executor is a process of its own; `embedded`: the gateway process hosts the
    first CPU executor (its own port, API, heartbeats and pulses) and hands it query frames by a function
    call instead of a socket (`infaas.wire.loopback`): two process wake-ups less per query it serves
    (docs/benchmarks.md). The price: a model that crashes its process takes the gateway down with it
    (the supervisor starts both again), where a separate executor's crash costs a re-send."""

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
