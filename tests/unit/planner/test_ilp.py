"""The exact autoscaler (INFaaS ILP on HiGHS) against optima computed by hand; same costs as
test_autoscaler.py: C_a = 1e-4, C_b = 2e-4, C_g = 2e-3 $/s, T_load 0.1 / 0.2 / 2 s, λ = 1/s."""

from __future__ import annotations

from dataclasses import replace

import pytest

from services.planner.policies import greedy as autoscaler
from services.planner.policies import ilp
from services.planner.policies.snapshot import ClusterSnapshot, ModelDemand, ScalingConfig
from tests.unit.planner.autoscale_fixtures import SLOW_B, VARIANTS, snapshot, worker

CONFIG = ScalingConfig(slack_threshold=1.05, lam=1.0, min_scale_down_s=5.0)


def test_the_optimum_matches_the_greedy_choice_when_that_is_optimal() -> None:
    # load 300 on a ×1: upgrade to b (b +1, a −1) costs 2.4e-4 − 1e-4 = 1.4e-4; a +2 is too little
    # (300 < 315) and a +3 does not fit (only w2, w3 lack an a)
    solution = ilp.solve(snapshot(300, [("m.a", "w1")]), CONFIG)
    assert solution.feasible
    assert dict(solution.delta) == {"m.a": -1, "m.b": 1}
    assert solution.objective == pytest.approx(1.4e-4)
    (d,) = ilp.plan(snapshot(300, [("m.a", "w1")]), {}, CONFIG).decisions
    assert d.action == "upgrade" and d.loads == (("m.b", "w2"),) and d.unloads == (("m.a", "w1"),)


def test_the_optimum_can_keep_the_running_variant_beside_a_new_one() -> None:
    # load 450 (target 472.5) on a ×1. Greedy: replicate a ×4 does not fit, upgrade to b ×2
    # (2 × 400 ≥ 472.5) = 2e-4·2·1.2 − 1e-4 = 3.8e-4. ILP: keep a and add one b (100 + 400 = 500)
    # = 2e-4·1.2 = 2.4e-4 — the greedy heuristic's gap on this instance is 3.8/2.4 − 1 = 58 %.
    snap = snapshot(450, [("m.a", "w1")])
    (greedy,) = autoscaler.plan(snap, {}, CONFIG).decisions
    assert greedy.action == "upgrade" and greedy.cost == pytest.approx(3.8e-4)
    solution = ilp.solve(snap, CONFIG)
    assert dict(solution.delta) == {"m.b": 1}
    assert solution.objective == pytest.approx(2.4e-4)
    (d,) = ilp.plan(snap, {}, CONFIG).decisions
    assert d.action == "upgrade" and d.loads == (("m.b", "w2"),) and d.unloads == ()


def test_the_slo_and_accuracy_forbid_new_instances() -> None:
    # SLO 5 ms leaves a (2 ms) and g (5 ms at batch 8), not slow b (8 ms at batch 1); with a GPU worker,
    # load 300: a +2 → 300 < 315, so g +1 (2e-3·3 = 6e-3) minus a −1 (−1e-4) = 5.9e-3
    workers = (worker("w1"), worker("w2"), worker("w3"), worker("g1", hardware="cuda"))
    slow = (VARIANTS[0], SLOW_B, VARIANTS[2])
    solution = ilp.solve(snapshot(300, [("m.a", "w1")], workers, slo_ms=5.0, variants=slow), CONFIG)
    assert dict(solution.delta) == {"m.a": -1, "m.g": 1}
    assert solution.objective == pytest.approx(5.9e-3)
    # accuracy: only a qualifies, and a +3 does not fit next to w1's a: the optimum adds the two that fit
    # (capacity 300) and is 315 − 300 = 15 qps short → also ask for a CPU worker
    demand = ModelDemand("m", 300, tuple(replace(v, accuracy=0.5) if v.id != "m.a" else v for v in VARIANTS))
    snap = replace(snapshot(300, [("m.a", "w1")]), demands=(replace(demand, min_accuracy=0.8),))
    solution = ilp.solve(snap, CONFIG)
    assert not solution.feasible and solution.shortfall == {"m": pytest.approx(15.0)}
    assert dict(solution.delta) == {"m.a": 2}
    request, replicate = ilp.plan(snap, {}, CONFIG).decisions
    assert request.action == "request_worker" and request.hardware == "cpu"
    assert "15.0 rows/s short" in request.reason
    assert replicate.action == "replicate" and replicate.loads == (("m.a", "w2"), ("m.a", "w3"))


def test_memory_bounds_the_instances_per_hardware_kind() -> None:
    # Only 150 MB free on the CPU workers in all: one more 100 MB instance at most. load 450:
    # a +1 (cap 200) is short; b +1 (cap 500) fits → 2.4e-4
    workers = (worker("w1", memory=150 << 20), worker("w2", memory=100 << 20))
    snap = snapshot(450, [("m.a", "w1")], workers)
    solution = ilp.solve(snap, CONFIG)
    assert dict(solution.delta) == {"m.b": 1}


def test_scale_down_waits_t_v_like_the_greedy_policy() -> None:
    # a ×2, load 50 → a −1 saves 1e-4 (objective −1e-4), carried out after T_v = 5 s
    running = [("m.a", "w1"), ("m.a", "w2")]
    first = ilp.plan(snapshot(50, running, now=10.0), {}, CONFIG)
    assert first.decisions == () and list(first.pending.values()) == [10.0]
    (d,) = ilp.plan(snapshot(50, running, now=15.0), first.pending, CONFIG).decisions
    assert d.action == "remove" and d.unloads == (("m.a", "w1"),)


def test_an_empty_cluster_snapshot_is_solved_trivially() -> None:
    solution = ilp.solve(ClusterSnapshot(now=0.0, demands=(), workers=(), instances=()), CONFIG)
    assert solution.feasible and dict(solution.delta) == {}
