"""Selection's reference floor: a query that states no accuracy (and whose app is not lossy) is answered
only by variants at least as accurate as their own model as registered; the decision says what it left out."""

from __future__ import annotations

import dataclasses

import pytest

from infaas.core.errors import RequirementsUnmet
from infaas.policy.selection import InstanceView, Requirements, accurate_enough, get_variant
from infaas.schemas.variants import VariantProfile
from tests.unit.kernel.selection_fixtures import snapshot, variant


def of(model: str, reference: float | None, vid: str, accuracy: float, *, cost: float) -> VariantProfile:
    return dataclasses.replace(
        variant(vid, accuracy=accuracy), model=model, reference_accuracy=reference, cost_per_query=cost
    )


# Two models behind one app: the int8 forms are the cheapest; each model has its own reference.
IRIS_FP32 = of("iris-mlp", 0.96, "iris.fp32", 0.96, cost=3.0)
IRIS_INT8 = of("iris-mlp", 0.96, "iris.int8", 0.93, cost=1.0)
SONAR_FP32 = of("sonar-net", 0.81, "sonar.fp32", 0.81, cost=4.0)
SONAR_INT8 = of("sonar-net", 0.81, "sonar.int8", 0.82, cost=2.0)  # the int8 form happens to score higher
ALL = [IRIS_FP32, IRIS_INT8, SONAR_FP32, SONAR_INT8]
ACTIVE = tuple(InstanceView("w1", v.id, "active") for v in ALL)


def test_without_the_floor_the_cheapest_lossy_variant_wins() -> None:
    decision = get_variant(Requirements(), 1, ALL, snapshot(ALL, ACTIVE))
    assert decision.variant is IRIS_INT8
    assert "lossy" not in decision.reason


def test_the_floor_is_per_model_and_says_what_it_left_out() -> None:
    decision = get_variant(Requirements(at_reference=True), 1, ALL, snapshot(ALL, ACTIVE))
    # iris.int8 (0.93 < 0.96) is out; sonar.int8 (0.82 >= its own model's 0.81) stays and is the cheapest.
    assert decision.variant is SONAR_INT8
    assert "1 variant(s) less accurate than the registered model left out" in decision.reason
    assert "lossy: false" in decision.reason


def test_nothing_left_out_leaves_the_reason_alone() -> None:
    fp32_only = [IRIS_FP32, SONAR_FP32]
    decision = get_variant(Requirements(at_reference=True), 1, fp32_only, snapshot(fp32_only))
    assert "left out" not in decision.reason


def test_only_lossy_variants_is_requirements_unmet_saying_why() -> None:
    lossy = [IRIS_INT8]
    with pytest.raises(RequirementsUnmet) as info:
        get_variant(Requirements(at_reference=True), 1, lossy, snapshot(lossy))
    assert "lossy: false" in info.value.message
    assert info.value.details["closest"]["best_accuracy"] == pytest.approx(0.93)


def test_an_unmet_latency_among_the_kept_ones_also_names_the_floor() -> None:
    slow_fp32 = dataclasses.replace(IRIS_FP32, latencies=variant("s", latencies=((1, 50.0, 60.0),)).latencies)
    pool = [slow_fp32, IRIS_INT8]
    with pytest.raises(RequirementsUnmet) as info:
        get_variant(Requirements(slo_ms=10, at_reference=True), 1, pool, snapshot(pool))
    assert "less accurate than the registered model left out" in info.value.message


def test_an_unknown_reference_sets_no_floor() -> None:
    unknown = of("new-model", None, "new.int8", 0.5, cost=1.0)
    assert get_variant(Requirements(at_reference=True), 1, [unknown], snapshot([unknown])).variant is unknown


def test_accurate_enough_is_what_the_prediction_cache_checks() -> None:
    assert accurate_enough(IRIS_INT8, Requirements())
    assert not accurate_enough(IRIS_INT8, Requirements(at_reference=True))
    assert accurate_enough(SONAR_INT8, Requirements(at_reference=True))
    assert not accurate_enough(IRIS_FP32, Requirements(min_accuracy=0.97))
