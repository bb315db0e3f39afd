"""A pipeline stage's accuracy rule is a plain query's: its floor, the pipeline's, the app's default, and
with none stated only variants as accurate as their model as registered, unless the app is lossy. The
planner offers each stage only such variants (pure: no clock, no network)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from infaas.schemas.pipelines import Pipeline, PipelineEdge, PipelineStage
from infaas.schemas.variants import VariantProfile
from services.planner.pipelines import plan_stages
from tests.factories import variant_profile


def pipeline(stage_floor: float | None = None, floor: float | None = None) -> Pipeline:
    return Pipeline(
        name="p",
        app="a",
        slo_ms=100,
        min_accuracy=floor,
        stages=[
            PipelineStage(name="s", model="m", min_accuracy=stage_floor),
            PipelineStage(name="t", model="n"),
        ],
        edges=[PipelineEdge(source="s", target="t", inputs={"x": "y"})],
        order=["s", "t"],
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
    )


def form(model: str, precision: str, accuracy: float) -> VariantProfile:
    return variant_profile(
        id=f"{model}.{precision}",
        model=model,
        precision=precision,
        max_batch=1,
        artifact_digest="d",
        accuracy=accuracy,
        latencies=((1, 1.0, 1.0),),
        saturation_qps=1.0,
        cost_per_query=1.0,
        reference_accuracy=1.0,
    )


VARIANTS = {v.id: v for v in (form("m", "fp32", 1.0), form("m", "int8", 0.51), form("n", "fp32", 0.9))}


def offered(p: Pipeline, **app: object) -> dict[str, list[str]]:
    stages = plan_stages(p, VARIANTS, {"s": 1.0, "t": 1.0}, {"cpu"}, **app)  # type: ignore[arg-type]
    return {s.shape.name: sorted(v.id for v in s.variants) for s in stages}


def test_with_no_floor_anywhere_a_stage_keeps_its_model_as_registered() -> None:
    p = pipeline()
    assert p.stage_accuracy(p.stages[0], app_min_accuracy=None, lossy=False) == (None, True)
    assert offered(p) == {"s": ["m.fp32"], "t": []}  # n's only form is below its reference


def test_a_lossy_app_takes_every_form() -> None:
    p = pipeline()
    assert p.stage_accuracy(p.stages[0], app_min_accuracy=None, lossy=True) == (None, False)
    assert offered(p, lossy=True) == {"s": ["m.fp32", "m.int8"], "t": ["n.fp32"]}


def test_floors_come_from_the_stage_then_the_pipeline_then_the_app() -> None:
    p = pipeline(stage_floor=0.5, floor=0.95)
    assert p.stage_accuracy(p.stages[0], app_min_accuracy=0.2, lossy=False) == (0.5, False)
    assert p.stage_accuracy(p.stages[1], app_min_accuracy=0.2, lossy=False) == (0.95, False)
    assert offered(p) == {"s": ["m.fp32", "m.int8"], "t": []}
    q = pipeline()
    assert q.stage_accuracy(q.stages[1], app_min_accuracy=0.85, lossy=False) == (0.85, False)
    assert offered(q, app_min_accuracy=0.85) == {"s": ["m.fp32"], "t": ["n.fp32"]}


def test_a_variant_whose_reference_is_unknown_is_not_held_to_it() -> None:
    unknown = {k: replace(v, reference_accuracy=None) for k, v in VARIANTS.items()}
    stages = plan_stages(pipeline(), unknown, {"s": 1.0, "t": 1.0}, {"cpu"})
    assert sorted(v.id for v in stages[0].variants) == ["m.fp32", "m.int8"]
