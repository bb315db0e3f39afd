"""The admin UI's pipelines page: each pipeline as a graph — a box per stage with its planned variant,
batch × replicas, s_m and $/s, an arrow per edge with its branch condition — and the plan's numbers."""

from __future__ import annotations

from datetime import UTC, datetime

from gateway.ui.pipeline_graph import pipeline_svg
from gateway.ui.routes import render
from infaas.schemas.pipelines import Pipeline, PipelinePlan, StagePlan

NOW = datetime(2026, 11, 24, tzinfo=UTC)


def pipeline(planned: bool) -> Pipeline:
    plan = PipelinePlan(
        stages=[
            StagePlan(stage="detect", variant="det.ort-basic-fp32-cpu-b16-t1", hardware="cpu", batch=8,
                      replicas=2, scale=1.0, cost_per_s=0.02),
            StagePlan(stage="classify", variant="cls.ort-basic-int8-cpu-b4-t1", hardware="cpu", batch=4,
                      replicas=1, scale=0.3, cost_per_s=0.004),
        ],
        cost_per_s=0.024,
        predicted_p99_ms=41.5,
        rate_qps=50,
        cv=4,
        feasible=True,
        reason="estimated P99 41.5 ms ≤ SLO 60 ms",
    )  # fmt: skip
    return Pipeline(
        name="vision",
        app="a<b",
        slo_ms=60,
        min_accuracy=None,
        stages=[{"name": "detect", "model": "det"}, {"name": "classify", "model": "cls"}],  # type: ignore[list-item]
        edges=[
            {
                "source": "detect",
                "target": "classify",
                "inputs": {"crop": "boxes"},
                "when": {"output": "kind", "classes": [1, 2]},
            }
        ],  # type: ignore[list-item]  # fmt: skip
        order=["detect", "classify"],
        plan=plan if planned else None,
        created_at=NOW,
    )


def test_the_graph_shows_each_stage_its_plan_and_each_edge_with_its_condition() -> None:
    svg = str(pipeline_svg(pipeline(planned=True)))
    assert svg.count('class="stage"') == 2 and svg.count('class="edge"') == 1
    assert "ort-basic-int8-cpu-b4-t1" in svg and "b4 × 1" in svg and "s=0.30" in svg and "$0.004/s" in svg
    assert "kind ∈ [1, 2]" in svg and "crop ← boxes" in svg
    # The root is left of the stage it feeds.
    assert svg.index('x="12" y="12" width="210"') < svg.index('x="292" y="12" width="210"')
    assert "not planned" in str(pipeline_svg(pipeline(planned=False)))


def test_the_page_lists_the_plan_and_escapes_names() -> None:
    p = pipeline(planned=True)
    page = render("pipelines.html", page="pipelines", pipelines=[p], graphs={p.name: pipeline_svg(p)})
    body = page.body.decode()
    assert "predicted P99 41.5 ms" in body and "50.0 q/s (CV 4.0)" in body and "feasible" in body
    assert "app a&lt;b" in body and "<svg" in body
