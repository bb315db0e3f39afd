"""Which instances a new pipeline plan leaves unused (`services/planner/retirement.superseded`): pure."""

from __future__ import annotations

from infaas.policy.selection import InstanceState, InstanceView
from infaas.schemas.pipelines import PipelinePlan, StagePlan
from services.planner.retirement import superseded


def plan_of(**stages: tuple[str, int]) -> PipelinePlan:
    """stage=(variant, replicas)."""
    return PipelinePlan(
        stages=[
            StagePlan(stage=s, variant=v, hardware="cpu", batch=1, replicas=k, scale=1.0, cost_per_s=1.0)
            for s, (v, k) in stages.items()
        ],
        cost_per_s=1.0,
        predicted_p99_ms=1.0,
        rate_qps=1.0,
        feasible=True,
        reason="",
    )


def at(variant: str, *workers: str, state: InstanceState = "active") -> list[InstanceView]:
    return [InstanceView(worker_id=w, variant_id=variant, state=state) for w in workers]


def test_a_stage_moved_to_another_variant_drains_the_old_one_everywhere() -> None:
    before = plan_of(detect=("det.fp32", 2), rank=("rank.fp32", 1))
    after = plan_of(detect=("det.int8", 1), rank=("rank.fp32", 1))
    live = [*at("det.fp32", "w1", "w2"), *at("det.int8", "w1"), *at("rank.fp32", "w2")]
    gone = superseded(before, after, live, elsewhere=set())
    assert [(g.variant, g.worker) for g in gone] == [("det.fp32", "w1"), ("det.fp32", "w2")]
    assert "the new plan serves it with det.int8 ×1" in gone[0].reason


def test_replicas_beyond_the_plan_go_and_nothing_else_is_touched() -> None:
    after = plan_of(detect=("det.fp32", 1))
    live = [*at("det.fp32", "w2", "w1"), *at("other.model", "w1"), *at("det.fp32", "w3", state="failed")]
    gone = superseded(plan_of(detect=("det.fp32", 2)), after, live, elsewhere=set())
    assert [(g.variant, g.worker) for g in gone] == [("det.fp32", "w2")]
    assert "2 instances of det.fp32, 1 planned" in gone[0].reason


def test_a_variant_another_plan_uses_or_a_first_plan_drains_nothing() -> None:
    before = plan_of(detect=("det.fp32", 1))
    after = plan_of(detect=("det.int8", 1))
    live = [*at("det.fp32", "w1"), *at("det.int8", "w2")]
    assert superseded(before, after, live, elsewhere={"det.fp32"}) == []
    assert superseded(None, after, live, elsewhere=set()) == []
