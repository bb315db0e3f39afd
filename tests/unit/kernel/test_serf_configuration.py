"""Choosing the cheapest configuration that meets an SLO, on hand-made concurrency profiles."""

from __future__ import annotations

import pytest

from infaas.core.costs import PriceTable
from infaas.policy.configuration import (
    Configuration,
    choose,
    concurrency_for,
    configurations,
    instances_for,
    table,
)

PRICES = PriceTable(cpu_vcpu_hour=3.6, gpu_hour=3.6)  # $0.001 per vCPU-second or GPU-second


def _cpu(mean_ms: list[float], threads: int = 1, vid: str = "m-cpu") -> list[Configuration]:
    return configurations(
        variant_id=vid, hardware="cpu", threads=threads, max_batch=1, mean_ms=mean_ms, prices=PRICES
    )


def test_costs_count_the_cores_each_concurrent_request_holds() -> None:
    cpu = _cpu([10.0, 12.0, 16.0], threads=2)
    assert [c.cost_per_s for c in cpu] == pytest.approx([0.002, 0.004, 0.006])
    assert cpu[2].service_rates == pytest.approx((100.0, 1000 / 12, 62.5))
    gpu = configurations(
        variant_id="m-gpu", hardware="cuda", threads=1, max_batch=1, mean_ms=[5.0, 6.0], prices=PRICES
    )
    assert gpu[0].cost_per_s == gpu[1].cost_per_s  # one device however many requests share it
    assert _cpu([10.0, 0.0]) == []  # a broken profile offers no configuration


def test_low_load_takes_one_request_at_a_time() -> None:
    # c = 1 at 20 req/s: W = 10 + ρ/(2μ(1 − ρ)) = 10 + 1.25 ms, well inside 30 ms, on one vCPU.
    choice = choose(_cpu([10.0, 10.5]), 20.0, 30.0)
    assert choice is not None and choice.meets_slo
    assert (choice.configuration.concurrency, choice.instances) == (1, 1)
    assert choice.prediction.latency_ms == pytest.approx(11.25)
    assert choice.cost_per_s == pytest.approx(0.001)


def test_strong_interference_replicates_instead_of_running_concurrently() -> None:
    # Two requests together take 20 ms each: c = 2 carries no more than c = 1 (100 req/s) and costs
    # twice as much. At 150 req/s, c = 1 needs 2 instances (≤ 80 req/s each meets 30 ms: ρ ≤ 0.8).
    choice = choose(_cpu([10.0, 20.0]), 150.0, 30.0)
    assert choice is not None and choice.meets_slo
    assert (choice.configuration.concurrency, choice.instances) == (1, 2)
    assert choice.prediction.latency_ms == pytest.approx(25.0)  # 75 req/s each: 10 + 15 ms


def test_weak_interference_ties_on_cost_and_wins_on_latency() -> None:
    # μ2 ≈ 95 req/s: one c = 2 instance (2 vCPUs) carries 150 req/s at ~19.1 ms, the same cost as two
    # c = 1 instances at 25 ms, so the lower predicted latency decides.
    choice = choose(_cpu([10.0, 10.5]), 150.0, 30.0)
    assert choice is not None
    assert (choice.configuration.concurrency, choice.instances) == (2, 1)
    assert choice.prediction.latency_ms == pytest.approx(19.08, abs=0.01)


def test_an_accelerator_runs_concurrently_for_free() -> None:
    gpu = configurations(
        variant_id="m-gpu",
        hardware="cuda",
        threads=1,
        max_batch=1,
        mean_ms=[5.0, 5.5, 6.5, 8.0],
        prices=PRICES,
    )
    choice = choose(gpu + _cpu([10.0, 10.5]), 400.0, 20.0)
    assert choice is not None and choice.configuration.hardware == "cuda"
    assert choice.instances == 1 and choice.configuration.concurrency >= 3  # 400 req/s > 2 × 182


def test_no_configuration_meets_the_slo() -> None:
    choice = choose(_cpu([10.0, 12.0]) + _cpu([6.0, 9.0], threads=2, vid="m-t2"), 50.0, 5.0)
    assert choice is not None and not choice.meets_slo
    assert choice.configuration.variant_id == "m-t2"  # the fastest, reported as such
    assert "no configuration" in choice.why
    assert instances_for(_cpu([10.0])[0], 50.0, 5.0) is None
    assert choose([], 10.0, 30.0) is None


def test_the_table_switches_to_dearer_configurations_as_load_grows() -> None:
    candidates = _cpu([10.0, 11.0, 13.0, 17.0]) + _cpu([6.0, 7.0, 9.0, 12.0], threads=2, vid="m-t2")
    rows = table(candidates, 30.0, [0.0, 50.0, 100.0, 200.0, 400.0, 800.0])
    costs = [c.cost_per_s for _, c in rows if c is not None]
    assert len(costs) == 6 and all(c.meets_slo for _, c in rows if c is not None)
    assert costs == sorted(costs) and costs[0] < costs[-1]
    for lam, c in rows:
        assert c is not None and c.prediction.latency_ms <= 30.0
        assert c.prediction.arrival_rps == pytest.approx(lam / c.instances)


# One instance's concurrency (`concurrency_for`): batch-1 requests take 10 ms alone, 12 ms two at once.
# At c = 1 the model is M/D/1: W = 10 + ρ/(2μ(1 − ρ)) s with μ = 100/s, within 30 ms iff ρ ≤ 0.8,
# i.e. up to 80 req/s. The choice is made for 1.2× the rate (up) and lowered only if it holds at 1.5×.
MEANS = (10.0, 12.0)


def test_one_batch_at_a_time_while_it_meets_the_slo_with_headroom() -> None:
    choice = concurrency_for(MEANS, 20.0, 30.0, current=1)
    assert choice is not None and choice.concurrency == 1 and choice.meets_slo
    assert choice.prediction.latency_ms == pytest.approx(10 + 0.2 / (2 * 100 * 0.8) * 1000)


def test_two_at_once_when_one_would_saturate_at_the_rate_with_headroom() -> None:
    choice = concurrency_for(MEANS, 70.0, 30.0, current=1)  # 84 req/s > 80 at c = 1
    assert choice is not None and choice.concurrency == 2 and choice.meets_slo
    assert choice.prediction.latency_ms <= 30
    # c = 1 would still meet it at 70 itself (ρ = 0.7): the switch comes before the rate does.
    assert choice.current.latency_ms == pytest.approx(10 + 0.7 / (2 * 100 * 0.3) * 1000)
    assert "c=2" in choice.why


def test_it_goes_back_down_only_when_one_would_hold_at_one_and_a_half_times_the_rate() -> None:
    # 60 req/s: one meets the SLO at 72 (×1.2) but not at 90 (×1.5): whatever it runs, it stays.
    stays_two = concurrency_for(MEANS, 60.0, 30.0, current=2)
    stays_one = concurrency_for(MEANS, 60.0, 30.0, current=1)
    assert stays_two is not None and stays_two.concurrency == 2
    assert stays_one is not None and stays_one.concurrency == 1
    # 40 req/s: one meets it at 60 (×1.5): down to one.
    down = concurrency_for(MEANS, 40.0, 30.0, current=2)
    assert down is not None and down.concurrency == 1


def test_the_observed_slowdown_scales_the_profile() -> None:
    # At 25 req/s one batch at a time meets 30 ms on the profile, but not at twice the profiled time
    # (20 ms alone: ρ = 0.6 at 30 req/s, W = 20 + 15 ms).
    plain = concurrency_for(MEANS, 25.0, 30.0, current=1)
    slowed = concurrency_for(MEANS, 25.0, 30.0, current=1, slowdown=2.0)
    assert plain is not None and plain.concurrency == 1
    assert slowed is not None and slowed.concurrency == 2


def test_when_nothing_meets_the_slo_the_fastest_is_chosen_and_said() -> None:
    choice = concurrency_for(MEANS, 150.0, 15.0, current=1)
    assert choice is not None and not choice.meets_slo
    assert choice.concurrency == 2  # the only stable one at 150 req/s (c = 1 saturates at 100)
    assert "no concurrency of 1..2" in choice.why


@pytest.mark.parametrize("means", [(), (10.0,), (10.0, 0.0), (10.0, float("nan"))])
def test_nothing_to_choose_without_two_usable_points(means: tuple[float, ...]) -> None:
    assert concurrency_for(means, 10.0, 30.0, current=1) is None


def test_an_instance_whose_batching_carries_the_rate_stays_at_one() -> None:
    # 70 req/s needs two batch-1 requests at once, but batching carries 200 req/s at c = 1 (the
    # executor's batches amortize the run): one at a time, and back to one from two when it has 1.5×.
    batching = concurrency_for(MEANS, 70.0, 30.0, current=1, batched_rps=200.0)
    assert batching is not None and batching.concurrency == 1 and "batching carries 200.0" in batching.why
    assert concurrency_for(MEANS, 70.0, 30.0, current=2, batched_rps=200.0).concurrency == 1  # type: ignore[union-attr]
    # Batching that covers 1.2× but not 1.5× the rate does not bring a second batch back down.
    held = concurrency_for(MEANS, 70.0, 30.0, current=2, batched_rps=90.0)
    assert held is not None and held.concurrency == 2
    short = concurrency_for(MEANS, 70.0, 30.0, current=1, batched_rps=80.0)  # < 84: the profile decides
    assert short is not None and short.concurrency == 2
