"""Warm instances: a ready model is brought up to its app's `warm_instances` with the variant cheapest to
keep that meets the app's defaults, and the scaling policies never take it below that floor."""

from __future__ import annotations

from dataclasses import replace

from infaas.policy.selection import InstanceView
from services.planner.policies import greedy, ilp
from services.planner.policies.snapshot import ClusterSnapshot, ModelDemand, ScalingConfig
from services.planner.policies.warm import warm_up
from tests.unit.planner.autoscale_fixtures import CPU3, SLOW_B, VARIANTS, A, B, G, snapshot

CONFIG = ScalingConfig(slack_threshold=1.05, lam=1.0, min_scale_down_s=0.0)


def idle(warm: int | None, running: list[tuple[str, str]] | None = None, **demand: object) -> ClusterSnapshot:
    base = snapshot(0, running or [])
    (d,) = base.demands
    return replace(base, demands=(replace(d, warm_instances=warm, **demand),))  # type: ignore[arg-type]


def test_a_ready_idle_model_gets_the_variant_cheapest_to_keep() -> None:
    # C: a 1e-4 $/s, b 2e-4, g 2e-3 (and no CUDA worker): a, on the least utilized worker (w2).
    (d,) = warm_up(idle(1), CONFIG)
    assert d.action == "load" and d.model == "m"
    assert d.loads == (("m.a", "w2"),)
    assert "0 of its app's 1 warm instance(s)" in d.reason and "m.a ×1" in d.reason
    assert "app defaults: none" in d.reason


def test_the_app_defaults_decide_which_variant_is_warm() -> None:
    # a reaches only 0.9; with a default accuracy of 0.95 only the (dearer) b qualifies.
    accurate_b = replace(B, accuracy=0.97)
    (d,) = warm_up(idle(1, variants=(A, accurate_b, G), min_accuracy=0.95), CONFIG)
    assert d.loads[0][0] == "m.b" and "accuracy ≥ 0.95" in d.reason


def test_a_lossy_variant_is_not_kept_warm_for_an_app_that_is_not_lossy() -> None:
    lossy_a = replace(A, accuracy=0.85, reference_accuracy=0.9)
    exact_b = replace(B, reference_accuracy=0.9)
    (d,) = warm_up(idle(1, variants=(lossy_a, exact_b, G), at_reference=True), CONFIG)
    assert d.loads[0][0] == "m.b" and "as accurate as the registered model" in d.reason
    (lossy,) = warm_up(idle(1, variants=(lossy_a, exact_b, G)), CONFIG)
    assert lossy.loads[0][0] == "m.a"


def test_nothing_is_loaded_before_the_model_is_ready_or_at_zero_or_when_the_floor_is_met() -> None:
    assert warm_up(idle(1, ready=False), CONFIG) == ()
    assert warm_up(idle(0), CONFIG) == ()
    assert warm_up(idle(1, [("m.b", "w1")]), CONFIG) == ()
    assert warm_up(idle(1), CONFIG, skip_models={"m"}) == ()


def test_more_of_the_running_variant_up_to_the_floor() -> None:
    (d,) = warm_up(idle(3, [("m.b", "w1")]), CONFIG)
    assert sorted(d.loads) == [("m.b", "w2"), ("m.b", "w3")]


def test_a_floor_beyond_one_per_worker_takes_the_next_cheapest_variant() -> None:
    (d,) = warm_up(idle(4), CONFIG)  # one instance of a variant per worker: 3 of a, then 1 of b
    assert [vid for vid, _ in d.loads] == ["m.a", "m.a", "m.a", "m.b"]


def test_a_hold_says_why_when_no_variant_meets_the_defaults_or_no_worker_has_room() -> None:
    (d,) = warm_up(idle(1, variants=(A, SLOW_B), slo_ms=0.5), CONFIG)
    assert d.action == "hold" and d.loads == () and "no variant of 2 meets the app's defaults" in d.reason
    full = replace(idle(1), workers=tuple(replace(w, memory_used_bytes=w.memory_bytes) for w in CPU3))
    (held,) = warm_up(full, CONFIG)
    assert held.action == "hold" and "no live worker has room for m.a" in held.reason


def test_the_scaling_policies_never_go_below_the_warm_floor() -> None:
    two = idle(2, [("m.a", "w1"), ("m.a", "w2")])
    for policy in (greedy.plan, ilp.plan):
        first = policy(two, {}, CONFIG)
        later = policy(replace(two, now=two.now + 10), first.pending, CONFIG)
        assert not [d for d in later.decisions if d.unloads], policy
    # The same idle instances with a floor of 1: one goes.
    one = idle(1, [("m.a", "w1"), ("m.a", "w2")])
    first = greedy.plan(one, {}, CONFIG)
    (d,) = greedy.plan(replace(one, now=one.now + 10), first.pending, CONFIG).decisions
    assert d.action == "remove" and len(d.unloads) == 1
    # 0: idle models may go entirely.
    zero = idle(0, [("m.a", "w1")])
    first = greedy.plan(zero, {}, CONFIG)
    (gone,) = greedy.plan(replace(zero, now=zero.now + 10), first.pending, CONFIG).decisions
    assert gone.action == "remove"


def test_the_warm_floor_overrides_the_configured_minimum_only_when_set() -> None:
    demand = ModelDemand("m", 0.0, VARIANTS)
    assert demand.warm_instances is None
    snap = replace(snapshot(0, [("m.a", "w1")]), demands=(demand,))
    first = greedy.plan(snap, {}, CONFIG)
    assert greedy.plan(replace(snap, now=snap.now + 10), first.pending, CONFIG).decisions == ()
    assert (
        warm_up(replace(snap, instances=(InstanceView("w1", "m.a", "failed"),)), CONFIG)[0].action == "load"
    )
