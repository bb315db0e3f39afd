"""The Grafana dashboard only queries metrics the code really registers."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path

from prometheus_client import REGISTRY

from infaas.metrics.http import metrics_for

DASHBOARD = Path(__file__).resolve().parents[3] / "deploy" / "grafana" / "infaas-serving.json"
METRIC_MODULES = (
    "services.executor.metrics",
    "services.scheduler.metrics",
    "services.planner.metrics",
    "services.profiler.worker",
)
METRIC = re.compile(r"\b(infaas_[a-z0-9_]+)")
# Serving metrics the brief of the dashboard names: each must be charted.
REQUIRED = {
    "infaas_gateway_http_request_duration_seconds_bucket",  # p50 / p99
    "infaas_gateway_http_requests_total",  # request rate
    "infaas_scheduler_slo_total",  # SLO-miss rate
    "infaas_inference_pending_request_count",  # queue length
    "infaas_executor_batch_rows_bucket",  # batch sizes
    "infaas_instance_state",  # instance states
    "infaas_cache_requests_total",  # cache hit ratio
}


def registered_names() -> set[str]:
    # Metrics modules register their collectors on import; the HTTP ones are made per service.
    for module in METRIC_MODULES:
        importlib.import_module(module)
    for service in ("gateway", "scheduler", "executor", "registry", "planner"):
        metrics_for(service)
    return set(REGISTRY._names_to_collectors)


def expressions(dashboard: dict[str, object]) -> list[str]:
    out = []
    for panel in dashboard["panels"]:  # type: ignore[attr-defined]
        for target in panel.get("targets", []):
            out.append(target["expr"])
    return out


def test_every_metric_the_dashboard_queries_is_registered() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = expressions(dashboard)
    used = {name for expr in exprs for name in METRIC.findall(expr)}
    assert len(exprs) >= 20 and used
    missing = used - registered_names()
    assert not missing, f"the dashboard queries metrics no code registers: {sorted(missing)}"
    assert REQUIRED <= used


def test_panels_are_laid_out_and_use_the_datasource_variable() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] == "infaas-serving"
    assert [v["name"] for v in dashboard["templating"]["list"]] == ["datasource"]
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dashboard["panels"]:
        grid = panel["gridPos"]
        assert 0 <= grid["x"] and grid["x"] + grid["w"] <= 24
        for target in panel.get("targets", []):
            assert target["datasource"]["uid"] == "${datasource}"
