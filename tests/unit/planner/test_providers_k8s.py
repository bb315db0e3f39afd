"""The Kubernetes WorkerProvider against recorded API calls: a real `kubernetes.client.ApiClient` (its
serialization, URL building and deserialization all run) whose REST layer replays the JSON responses in
tests/unit/planner/k8s_recordings/ and checks each request (method, path, body) against the recording. No
cluster exists here; the recordings follow the Kubernetes API reference (autoscaling/v1 Scale,
apps/v1 Deployment, v1 Pod, v1 Status)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from kubernetes.client.rest import RESTResponse

from infaas.core.errors import Unavailable
from infaas.policy.selection import WorkerView
from services.planner.providers.kubernetes import KubernetesProvider, pod_name

RECORDINGS = Path(__file__).parent / "k8s_recordings"


@dataclass
class _Raw:
    status: int
    reason: str
    data: bytes
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": "application/json"})


class Replay:
    """Stands in for `kubernetes.client.rest.RESTClientObject`: same `request` signature."""

    def __init__(self, name: str) -> None:
        self.interactions: list[dict[str, Any]] = json.loads((RECORDINGS / name).read_text())
        self.seen: list[tuple[str, str, Any]] = []

    def request(
        self,
        method: str,
        url: str,
        headers: dict[str, str] | None = None,  # noqa: ARG002
        body: Any = None,
        post_params: Any = None,  # noqa: ARG002
        _request_timeout: Any = None,
    ) -> RESTResponse:
        path = urlsplit(url).path
        assert self.interactions, f"unexpected request {method} {path}"
        expected = self.interactions.pop(0)
        self.seen.append((method, path, body))
        assert (method, path) == (expected["method"], expected["path"])
        if "body" in expected:
            assert body == expected["body"]
        raw = _Raw(expected["status"], "recorded", json.dumps(expected["response"]).encode())
        return RESTResponse(raw)


def provider(recording: str) -> tuple[KubernetesProvider, Replay]:
    api = k8s.ApiClient(k8s.Configuration(host="https://kubernetes.default.svc"))
    replay = Replay(recording)
    api.rest_client = replay
    return KubernetesProvider(api, namespace="infaas"), replay


WORKER = WorkerView(
    "cpu-infaas-executor-cpu-7d9f8b6c5-x2x4k-8083", "cpu", "http://10.244.1.17:8083", 2, 1 << 30
)


async def test_add_scales_the_kinds_deployment_up_by_one_and_counts_pods_not_ready() -> None:
    p, replay = provider("scale_up.json")
    assert await p.add("cpu") == "infaas/infaas-executor-cpu: replicas 2 → 3"
    assert await p.starting() == {"cpu": 1}  # 3 wanted, 2 ready
    assert not replay.interactions  # every recorded call was made, in order


async def test_remove_marks_the_pod_to_go_first_then_scales_down() -> None:
    p, replay = provider("scale_down.json")
    assert p.owns(WORKER) and p.drains_itself  # the pod's preStop hook drains it
    await p.remove(WORKER)
    assert [m for m, _, _ in replay.seen] == ["PATCH", "GET", "PATCH"]
    assert not replay.interactions


async def test_an_rbac_refusal_surfaces_as_the_apis_error() -> None:
    p, _ = provider("forbidden.json")
    with pytest.raises(ApiException) as info:
        await p.add("cpu")
    assert info.value.status == 403


async def test_a_kind_without_a_deployment_is_refused_without_calling_the_api() -> None:
    p, replay = provider("forbidden.json")
    with pytest.raises(Unavailable):
        await p.add("cuda")
    assert replay.seen == []


def test_pod_names_come_from_worker_ids() -> None:
    assert pod_name("cpu-infaas-executor-cpu-7d9f8b6c5-x2x4k-8083") == "infaas-executor-cpu-7d9f8b6c5-x2x4k"
    assert pod_name("cpu-vm-8083") == "vm"
    assert pod_name("nonsense") is None and pod_name("cpu-host-port") is None


def test_the_manifests_match_what_the_provider_expects() -> None:
    import yaml

    root = Path(__file__).resolve().parents[3] / "deploy" / "kubernetes"
    executors = list(yaml.safe_load_all((root / "executor.yaml").read_text()))
    p = KubernetesProvider(k8s.ApiClient(), namespace="infaas")
    assert {d["metadata"]["name"] for d in executors} == {p.deployment("cpu"), p.deployment("cuda")}
    for d in executors:
        container = d["spec"]["template"]["spec"]["containers"][0]
        assert "/v1/drain" in " ".join(container["lifecycle"]["preStop"]["exec"]["command"])
        assert d["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] >= 30
    role = next(d for d in yaml.safe_load_all((root / "planner.yaml").read_text()) if d["kind"] == "Role")
    grants = {(r["resources"][0], v) for r in role["rules"] for v in r["verbs"]}
    assert {("deployments/scale", "patch"), ("deployments/scale", "get"), ("pods", "patch")} <= grants
