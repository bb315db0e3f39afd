"""The greedy model autoscaler (INFaaS §4.2.2), each decision checked against costs computed by hand:
Cost(δ) = C·(δ + λ·T_load·max(δ, 0)) with λ = 1/s; C_a = 1e-4, C_b = 2e-4, C_g = 2e-3 $/s;
T_load a = 0.1 s, b = 0.2 s, g = 2 s."""

from __future__ import annotations

import pytest

from services.planner.policies.greedy import plan
from services.planner.policies.snapshot import ScalingConfig
from tests.unit.planner.autoscale_fixtures import CPU3, SLOW_B, A, G, snapshot, worker

CONFIG = ScalingConfig(slack_threshold=1.05, lam=1.0, min_scale_down_s=5.0)


def test_headroom_above_the_threshold_does_nothing() -> None:
    # capacity 100 / load 95 = 1.053 ≥ 1.05, and no instance could go (capacity 0 < 99.75)
    result = plan(snapshot(95, [("m.a", "w1")]), {}, CONFIG)
    assert result.decisions == () and result.pending == {}


def test_replicating_is_cheaper_than_upgrading_for_a_small_shortfall() -> None:
    # load 100: capacity 100 < 105. replicate a ×1: 1e-4·(1 + 0.1) = 1.1e-4;
    # upgrade b ×1: 2e-4·1.2 − 1e-4 = 1.4e-4; upgrade g: 2e-3·3 − 1e-4 (no cuda worker anyway)
    (d,) = plan(snapshot(100, [("m.a", "w1")]), {}, CONFIG).decisions
    assert d.action == "replicate"
    assert d.loads == (("m.a", "w2"),)  # least utilized worker not already hosting a
    assert d.unloads == ()
    assert d.cost == pytest.approx(1.1e-4)
    assert "headroom 100.0/100.0 rows/s = 1.00 < slack threshold 1.05" in d.reason


def test_upgrading_is_cheaper_than_replicating_for_a_large_shortfall() -> None:
    # load 300: target 315, need 215. replicate a ×3: 3.3e-4; upgrade b ×1: 1.4e-4 → upgrade
    (d,) = plan(snapshot(300, [("m.a", "w1")]), {}, CONFIG).decisions
    assert d.action == "upgrade"
    assert d.loads == (("m.b", "w2"),)
    assert d.unloads == (("m.a", "w1"),)  # the replaced instance goes once b is active
    assert d.cost == pytest.approx(1.4e-4)


def test_the_slo_rules_out_variants_that_no_batch_of_meets_it() -> None:
    # SLO 5 ms: slow b (8 ms already at batch 1) is out; replicate a ×3 needs 3 free workers, only w2,
    # w3 → upgrade to g on the GPU worker: 2e-3·(1 + 2) − 1e-4 = 5.9e-3
    workers = (*CPU3, worker("g1", hardware="cuda"))
    snap = snapshot(300, [("m.a", "w1")], workers, slo_ms=5.0, variants=(A, SLOW_B, G))
    (d,) = plan(snap, {}, CONFIG).decisions
    assert d.action == "upgrade" and d.loads == (("m.g", "g1"),)
    assert d.cost == pytest.approx(5.9e-3)


def test_a_worker_is_requested_when_no_option_fits() -> None:
    # one CPU worker, load 1000 (target 1050): replicate a ×10 and b ×3 need more workers than exist;
    # the cheapest option (b ×3: 6e-4·1.2 − 1e-4 = 6.2e-4) names the kind to add
    (d,) = plan(snapshot(1000, [("m.a", "w1")], (worker("w1"),)), {}, CONFIG).decisions
    assert d.action == "request_worker" and d.hardware == "cpu"
    assert d.cost == pytest.approx(6.2e-4)
    assert "asking for a cpu worker" in d.reason


def test_with_nothing_running_the_cheapest_way_to_carry_the_load_is_loaded() -> None:
    # load 100, target 105: a ×2 = 2e-4·1.1 = 2.2e-4; b ×1 = 2.4e-4
    (d,) = plan(snapshot(100, []), {}, CONFIG).decisions
    assert d.action == "load" and d.loads == (("m.a", "w2"), ("m.a", "w3"))
    assert d.cost == pytest.approx(2.2e-4)


def test_a_replica_goes_only_after_t_v() -> None:
    # a on w1 and w2, load 50: without one a, 100 ≥ 52.5 → remove one (saves 1e-4), after T_v = 5 s
    running = [("m.a", "w1"), ("m.a", "w2")]
    first = plan(snapshot(50, running, now=100.0), {}, CONFIG)
    assert first.decisions == () and first.pending == {"m:remove:m.a": 100.0}
    waiting = plan(snapshot(50, running, now=104.9), first.pending, CONFIG)
    assert waiting.decisions == () and waiting.pending == first.pending
    (d,) = plan(snapshot(50, running, now=105.0), waiting.pending, CONFIG).decisions
    assert d.action == "remove" and d.unloads == (("m.a", "w1"),) and d.loads == ()
    assert d.cost == pytest.approx(-1e-4)


def test_t_v_is_the_variants_load_latency_when_that_is_longer() -> None:
    # floor 0: T_v = a's load latency, 0.1 s
    config = ScalingConfig(min_scale_down_s=0.0)
    running = [("m.a", "w1"), ("m.a", "w2")]
    first = plan(snapshot(50, running, now=100.0), {}, config)
    assert plan(snapshot(50, running, now=100.05), first.pending, config).decisions == ()
    (d,) = plan(snapshot(50, running, now=100.1), first.pending, config).decisions
    assert d.action == "remove"


def test_rising_load_cancels_a_pending_scale_down() -> None:
    running = [("m.a", "w1"), ("m.a", "w2")]
    first = plan(snapshot(50, running, now=100.0), {}, CONFIG)
    # load 150: capacity without one a (100) < 157.5: no longer proposed, the clock restarts
    assert plan(snapshot(150, running, now=103.0), first.pending, CONFIG).pending == {}


def test_downgrade_to_a_cheaper_variant_when_load_falls() -> None:
    # b ×1 costs 2e-4; load 20 (target 21): a ×1 carries it for 1e-4·1.1 − 2e-4 = −0.9e-4.
    # Removing b itself would leave no instance (min_instances = 1).
    running = [("m.b", "w1")]
    first = plan(snapshot(20, running, now=0.0), {}, CONFIG)
    assert first.pending == {"m:downgrade:m.a": 0.0}
    (d,) = plan(snapshot(20, running, now=5.0), first.pending, CONFIG).decisions
    assert d.action == "downgrade"
    assert d.loads == (("m.a", "w2"),) and d.unloads == (("m.b", "w1"),)
    assert d.cost == pytest.approx(-0.9e-4)


def test_an_idle_model_keeps_one_instance_unless_allowed_to_go() -> None:
    running = [("m.a", "w1")]
    assert plan(snapshot(0, running, now=0.0), {}, CONFIG).pending == {}
    config = ScalingConfig(min_instances=0, min_scale_down_s=0.0)
    first = plan(snapshot(0, running, now=0.0), {}, config)
    assert first.pending == {"m:remove:m.a": 0.0}  # waits T_v = 0.1 s
    (d,) = plan(snapshot(0, running, now=0.1), first.pending, config).decisions
    assert d.action == "remove" and d.unloads == (("m.a", "w1"),)


def test_two_decisions_in_one_tick_do_not_count_on_the_same_memory() -> None:
    # Two workers with room for exactly one 100 MB instance each: model m and its twin n both need a
    # replica; each gets a different worker.
    from dataclasses import replace

    from infaas.policy.selection import InstanceView
    from services.planner.policies.snapshot import ModelDemand
    from tests.unit.planner.autoscale_fixtures import A

    a2 = replace(A, id="n.a", model="n")
    workers = (
        worker("w1", memory=300 << 20),
        worker("w2", 0.1, memory=100 << 20),
        worker("w3", 0.2, memory=100 << 20),
    )
    snap = snapshot(100, [("m.a", "w1")], workers)
    snap = replace(
        snap,
        demands=(*snap.demands, ModelDemand("n", 100, (a2,))),
        instances=(*snap.instances, InstanceView("w1", "n.a", "active")),
    )
    decisions = plan(snap, {}, CONFIG).decisions
    assert sorted(d.loads for d in decisions) == [(("m.a", "w2"),), (("n.a", "w3"),)]


def test_the_horizontal_baseline_only_replicates_the_running_variant() -> None:
    # load 300 on a ×1: greedy would upgrade to b (1.4e-4 < 3.3e-4); SM+ may only add a ×3 (3.3e-4)
    from services.planner.policies.greedy import plan_horizontal

    workers = (*CPU3, worker("w4", 0.3))
    (d,) = plan_horizontal(snapshot(300, [("m.a", "w1")], workers), {}, CONFIG).decisions
    assert d.action == "replicate" and d.loads == (("m.a", "w2"), ("m.a", "w3"), ("m.a", "w4"))
    assert d.cost == pytest.approx(3.3e-4)


def test_what_fits_of_a_replication_is_placed_while_a_worker_is_requested() -> None:
    # SLO 5 ms rules out slow b; no GPU worker for g. Load 300 needs a ×3 more, only w2 is free:
    # replicate a ×1 now (1.1e-4) and ask for a cpu worker for the rest (the full option: a ×3, 3.3e-4).
    workers = (worker("w1", 0.5), worker("w2", 0.1))
    snap = snapshot(300, [("m.a", "w1")], workers, slo_ms=5.0, variants=(A, SLOW_B, G))
    partial, request = plan(snap, {}, CONFIG).decisions
    assert partial.action == "replicate" and partial.loads == (("m.a", "w2"),)
    assert partial.cost == pytest.approx(1.1e-4)
    assert "×1 of the ×3 needed" in partial.reason
    assert request.action == "request_worker" and request.hardware == "cpu"
    assert request.cost == pytest.approx(3.3e-4)
