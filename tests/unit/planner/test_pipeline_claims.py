"""Which models planned pipelines hold (`services/planner/loops/claims.py`): pure logic."""

from __future__ import annotations

from datetime import UTC, datetime

from infaas.schemas.pipelines import Pipeline, PipelinePlan, PipelineStage, StagePlan
from services.planner.loops.claims import Claim, claims_of


def pipeline(name: str, stages: dict[str, str], *, feasible: bool | None = True) -> Pipeline:
    """`stages`: stage → model; planned on `<model>.v` unless `feasible` is None (no plan)."""
    plan = None
    if feasible is not None:
        plan = PipelinePlan(
            stages=[
                StagePlan(
                    stage=s, variant=f"{m}.v", hardware="cpu", batch=1, replicas=1, scale=1.0, cost_per_s=0.0
                )
                for s, m in stages.items()
            ],
            cost_per_s=0.0,
            predicted_p99_ms=1.0,
            rate_qps=1.0,
            feasible=feasible,
            reason="",
        )
    return Pipeline(
        name=name,
        app="a",
        slo_ms=100.0,
        min_accuracy=None,
        stages=[PipelineStage(name=s, model=m) for s, m in stages.items()],
        edges=[],
        order=list(stages),
        plan=plan,
        created_at=datetime.now(UTC),
    )


def test_only_stored_feasible_plans_hold_their_stage_models() -> None:
    held = claims_of(
        [
            pipeline("zeta", {"detect": "det", "rank": "ranker"}),
            pipeline("alpha", {"first": "det"}),  # shares det: the first by name holds it
            pipeline("nope", {"x": "lonely"}, feasible=False),
            pipeline("unplanned", {"y": "other"}, feasible=None),
        ]
    )
    assert held == {
        "det": Claim("alpha", "first", "det.v"),
        "ranker": Claim("zeta", "rank", "ranker.v"),
    }
    assert claims_of([]) == {}
