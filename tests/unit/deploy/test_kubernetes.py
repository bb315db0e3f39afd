"""Static checks of the Kubernetes manifests' isolation: only the gateway open to the outside, internal
pods reachable from the suite's pods only, the drain hook holding the internal key."""

from __future__ import annotations

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
