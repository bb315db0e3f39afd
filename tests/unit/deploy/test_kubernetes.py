"""Static checks of the Kubernetes manifests: the isolation (only the gateway open to the outside, internal
pods reachable from the suite's pods only, the drain hook holding the internal key) and the whole suite
(a workload per service, an executor per hardware kind, artifacts fetched from the registry)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[3] / "deploy" / "kubernetes"


def _docs(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((ROOT / name).read_text(encoding="utf-8")) if d]


def test_only_the_gateway_takes_traffic_from_anywhere() -> None:
    policies = {p["metadata"]["name"]: p["spec"] for p in _docs("network-policy.yaml")}
    deny = policies["infaas-default-deny-ingress"]
    assert deny["podSelector"] == {} and deny["policyTypes"] == ["Ingress"] and "ingress" not in deny
    open_to_all = [s for s in policies.values() if any("from" not in rule for rule in s.get("ingress", []))]
    assert [s["podSelector"] for s in open_to_all] == [
        {"matchLabels": {"app.kubernetes.io/name": "infaas-gateway"}}
    ]
    internal = policies["infaas-internal-from-suite"]
    guarded = set(internal["podSelector"]["matchExpressions"][0]["values"])
    assert {
        "infaas-executor",
        "infaas-planner",
        "infaas-registry",
    } <= guarded and "infaas-gateway" not in guarded
    (rule,) = internal["ingress"]
    (source,) = rule["from"]
    assert set(source["podSelector"]["matchExpressions"][0]["values"]) >= guarded | {"infaas-gateway"}
    assert {p["port"] for p in rule["ports"]} >= {8081, 8083, 8093, 8084}


def test_the_secret_holds_the_internal_key_and_executors_drain_with_it() -> None:
    (secret,) = _docs("secret.yaml")
    assert {"INFAAS_INTERNAL_KEY", "INFAAS_REDIS_URL"} <= set(secret["stringData"])
    for deployment in _docs("executor.yaml"):
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        assert {"secretRef": {"name": "infaas"}} in container["envFrom"]
        hook = " ".join(container["lifecycle"]["preStop"]["exec"]["command"])
        assert "/v1/drain" in hook and "x-infaas-internal" in hook and "INFAAS_INTERNAL_KEY" in hook


# --- the whole suite on a cluster: a workload for every service, one executor per hardware kind,
# --- the artifact path the image has, and no shared volume but the registry's.

SERVICE_NAMES = ("gateway", "registry", "scheduler", "executor", "planner", "profiler", "jobs")
HTTP_PORTS = {"gateway": 8080, "registry": 8081, "scheduler": 8082, "executor": 8083, "planner": 8084}


def _all() -> list[dict[str, Any]]:
    return [d for path in sorted(ROOT.glob("*.yaml")) for d in _docs(path.name)]


def _workloads() -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in _all() if d["kind"] in ("Deployment", "Job")}


def _container(workload: dict[str, Any]) -> dict[str, Any]:
    (container,) = workload["spec"]["template"]["spec"]["containers"]
    return container


def _env(container: dict[str, Any]) -> dict[str, str]:
    """The container's environment as the kubelet builds it: ConfigMaps first, its own `env` over them."""
    maps = {d["metadata"]["name"]: d["data"] for d in _all() if d["kind"] == "ConfigMap"}
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        if "configMapRef" in source:
            env.update(maps[source["configMapRef"]["name"]])
    env.update({e["name"]: e.get("value", "") for e in container.get("env", [])})
    return env


def _selects(selector: dict[str, str], workload: dict[str, Any]) -> bool:
    labels = workload["spec"]["template"]["metadata"]["labels"]
    return all(labels.get(k) == v for k, v in selector.items())


def _image_artifact_dir() -> str:
    dockerfile = (ROOT.parents[1] / "Dockerfile").read_text(encoding="utf-8")
    match = re.search(r"INFAAS_ARTIFACT_DIR=(\S+)", dockerfile)
    assert match, "the image sets INFAAS_ARTIFACT_DIR"
    return match.group(1)


def test_every_service_has_a_workload_that_serves_it() -> None:
    served = {}
    for name, workload in _workloads().items():
        args = _container(workload)["args"]
        if args[0] == "serve":
            served.setdefault(args[1], []).append(name)
    assert set(served) == set(SERVICE_NAMES), served
    assert _container(_workloads()["infaas-migrate"])["args"] == ["db", "upgrade"]
    for workload in _workloads().values():
        sources = _container(workload)["envFrom"]
        assert {"configMapRef": {"name": "infaas-config"}} in sources
        assert {"secretRef": {"name": "infaas"}} in sources


def test_services_route_to_pods_that_listen_where_the_urls_say() -> None:
    services = {d["metadata"]["name"]: d["spec"] for d in _all() if d["kind"] == "Service"}
    env = _env(_container(_workloads()["infaas-gateway"]))
    for service in ("registry", "scheduler", "planner"):
        assert env[f"INFAAS_{service.upper()}_URL"] == f"http://infaas-{service}:{HTTP_PORTS[service]}"
    for service in ("gateway", "registry", "scheduler", "planner"):
        spec = services[f"infaas-{service}"]
        (port,) = spec["ports"]
        assert port["port"] == HTTP_PORTS[service]
        (pods,) = [w for w in _workloads().values() if _selects(spec["selector"], w)]
        container = _container(pods)
        assert {"containerPort": HTTP_PORTS[service], "name": port["targetPort"]} in container["ports"]


def test_one_executor_deployment_per_hardware_kind_requesting_that_hardware() -> None:
    executors = {n: w for n, w in _workloads().items() if _container(w)["args"][:2] == ["serve", "executor"]}
    assert set(executors) == {"infaas-executor-cpu", "infaas-executor-cuda"}
    for name, workload in executors.items():
        kind = name.removeprefix("infaas-executor-")
        assert workload["metadata"]["labels"]["infaas.io/hardware"] == kind
        container = _container(workload)
        assert _env(container)["INFAAS_EXECUTOR_HARDWARE"] == kind
        resources = container["resources"]
        gpus = [resources[part].get("nvidia.com/gpu") for part in ("requests", "limits")]
        assert gpus == ([1, 1] if kind == "cuda" else [None, None])
        assert container["image"].endswith("-gpu") == (kind == "cuda")  # the Dockerfile's gpu target
    planner = _container(_workloads()["infaas-planner"])
    kinds = yaml.safe_load(_env(planner)["INFAAS_KUBERNETES_WORKER_KINDS"])
    assert sorted(kinds) == ["cpu", "cuda"]
    (role,) = [d for d in _docs("planner.yaml") if d["kind"] == "Role"]
    for rule in role["rules"][:2]:
        assert sorted(rule["resourceNames"]) == sorted(executors)


def test_only_the_registry_mounts_the_repository_and_every_mount_is_where_the_image_looks() -> None:
    artifact_dir = _image_artifact_dir()
    claims = {}
    for name, workload in _workloads().items():
        spec = workload["spec"]["template"]["spec"]
        volumes = {v["name"]: v for v in spec.get("volumes", [])}
        for mount in _container(workload).get("volumeMounts", []):
            assert mount["mountPath"] == artifact_dir, (name, mount)
            volume = volumes[mount["name"]]
            if "persistentVolumeClaim" in volume:
                claims[name] = volume["persistentVolumeClaim"]["claimName"]
            else:
                assert "emptyDir" in volume, (name, volume)
                # A cache, so the process must fetch from the registry rather than take it as the repository.
                assert _env(_container(workload))["INFAAS_ARTIFACT_SOURCE"] == "registry", name
    assert claims == {"infaas-registry": "infaas-artifacts"}
    (claim,) = [d for d in _all() if d["kind"] == "PersistentVolumeClaim"]
    assert claim["metadata"]["name"] == "infaas-artifacts"
