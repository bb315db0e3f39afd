"""Workers as pods of one executor Deployment per hardware kind (`infaas-executor-<kind>`, see deploy/).

- add: +1 on the Deployment's `scale` subresource (`PATCH …/deployments/<name>/scale`).
- remove: mark the pod to go first (`controller.kubernetes.io/pod-deletion-cost: "-1000"`, honoured by
  the ReplicaSet controller since Kubernetes 1.22) and scale −1. The pod's preStop hook calls the
  executor's `POST /v1/drain?exit=false`, so it serves everything it was sent before it is stopped
  (`terminationGracePeriodSeconds` bounds the drain) — hence `drains_itself`.
- starting: `spec.replicas − status.readyReplicas` per Deployment.
The executor's worker id is `cpu-<hostname>-<port>` and a pod's hostname is its name, so the pod of a
worker is known without a lookup. Uses the official `kubernetes` client (synchronous, run in a thread).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from kubernetes import client as k8s

from infaas.core.errors import Unavailable
from infaas.policy.selection import WorkerView
from services.planner.providers.base import WorkerProvider

DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


class KubernetesProvider(WorkerProvider):
    name = "kubernetes"
    drains_itself = True

    def __init__(
        self,
        api: k8s.ApiClient,
        *,
        namespace: str = "infaas",
        deployment_prefix: str = "infaas-executor-",
        kinds: tuple[str, ...] = ("cpu",),
    ) -> None:
        self.api = api
        self.apps = k8s.AppsV1Api(api)
        self.core = k8s.CoreV1Api(api)
        self.namespace = namespace
        self.prefix = deployment_prefix
        self.kinds = kinds

    @classmethod
    def in_cluster(cls, **kwargs: Any) -> KubernetesProvider:
        """From the pod's service account (the planner runs in the cluster; RBAC in deploy/), in the
        planner's own namespace unless one is given."""
        from kubernetes import config

        config.load_incluster_config()  # type: ignore[no-untyped-call]
        if "namespace" not in kwargs and SERVICE_ACCOUNT_NAMESPACE.exists():
            kwargs["namespace"] = SERVICE_ACCOUNT_NAMESPACE.read_text().strip()
        return cls(k8s.ApiClient(), **kwargs)

    def deployment(self, hardware: str) -> str:
        return f"{self.prefix}{hardware}"

    async def add(self, hardware: str) -> str:
        if hardware not in self.kinds:
            raise Unavailable(f"no executor Deployment for hardware kind {hardware}", hardware=hardware)
        return await asyncio.to_thread(self._resize, hardware, +1)

    def _resize(self, hardware: str, step: int) -> str:
        name = self.deployment(hardware)
        scale = self.apps.read_namespaced_deployment_scale(name, self.namespace)
        current = int(scale.spec.replicas or 0) if scale.spec is not None else 0
        wanted = max(0, current + step)
        self.apps.patch_namespaced_deployment_scale(name, self.namespace, {"spec": {"replicas": wanted}})
        return f"{self.namespace}/{name}: replicas {current} → {wanted}"

    def owns(self, worker: WorkerView) -> bool:
        return worker.hardware in self.kinds and pod_name(worker.id) is not None

    async def remove(self, worker: WorkerView) -> None:
        pod = pod_name(worker.id)
        if pod is None:
            raise Unavailable(f"{worker.id} is not a pod of this cluster", worker=worker.id)
        await asyncio.to_thread(self._remove, pod, worker.hardware)

    def _remove(self, pod: str, hardware: str) -> None:
        self.core.patch_namespaced_pod(
            pod, self.namespace, {"metadata": {"annotations": {DELETION_COST: "-1000"}}}
        )
        self._resize(hardware, -1)

    async def starting(self) -> dict[str, int]:
        return await asyncio.to_thread(self._starting)

    def _starting(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for kind in self.kinds:
            d = self.apps.read_namespaced_deployment(self.deployment(kind), self.namespace)
            wanted = int(d.spec.replicas or 0) if d.spec is not None else 0
            ready = int(d.status.ready_replicas or 0) if d.status is not None else 0
            waiting = wanted - ready
            if waiting > 0:
                out[kind] = waiting
        return out

    async def close(self) -> None:
        await asyncio.to_thread(self.api.close)


def pod_name(worker_id: str) -> str | None:
    """`cpu-<pod name>-<port>` → `<pod name>` (worker ids are built by services/executor/app.py)."""
    kind, sep, rest = worker_id.partition("-")
    host, dash, port = rest.rpartition("-")
    if not sep or not dash or not port.isdigit() or not host:
        return None
    return host
