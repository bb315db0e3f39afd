"""Issue 19's autoscaling rules on frozen snapshots, for the greedy and ILP policies: the planner scales
on demand (shed queries included), takes capacity at the batch sizes traffic forms under the SLO, never
scales down while the SLO is being missed, and never takes away an instance loaded moments ago."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

import pytest

from infaas.policy.capacity import Observed, instance_capacity, service_rate, slo_batch, throughput
from infaas.policy.selection import InstanceView
from services.planner.policies import greedy, ilp
from services.planner.policies.snapshot import ClusterSnapshot, ModelDemand, Plan, ScalingConfig
from tests.factories import variant_profile
from tests.unit.planner.autoscale_fixtures import CPU3

PolicyFn = Callable[[ClusterSnapshot, Mapping[str, float], ScalingConfig], Plan]
CONFIG = ScalingConfig(slack_threshold=1.05, lam=1.0, min_scale_down_s=5.0, keep_loaded_s=30.0)

# A wide MLP as profiled: 5 ms per row at batch 1, batches pay off up to 64 rows (3,848 rows/s there),
# but a 64-row batch takes 16.6 ms p50 / 20 ms p99 and a 4-row one 8 ms p99.
WIDE = variant_profile(
    id="w.f32",
    model="w",
    max_batch=64,
    latencies=((1, 4.0, 5.0), (4, 6.0, 8.0), (16, 9.0, 12.0), (64, 16.63, 20.0)),
    saturation_qps=3848.0,
    cost_per_query=1e-7,
    load_ms=200.0,
    peak_memory_bytes=100 << 20,
)


def snap(
    load: float,
    running: list[str],
    *,
    slo_ms: float | None = 20.0,
    shed: float = 0.0,
    late: float = 0.0,
    missed: float = 0.0,
    observed: dict[str, Observed] | None = None,
    loaded_at: dict[str, float] | None = None,
    now: float = 1000.0,
) -> ClusterSnapshot:
    """Model `w` with instances of WIDE on the named workers of CPU3."""
    return ClusterSnapshot(
        now=now,
        demands=(
            ModelDemand("w", load, (WIDE,), slo_ms=slo_ms, shed_qps=shed, late_qps=late, missed_share=missed),
        ),
        workers=CPU3,
        instances=tuple(InstanceView(w, WIDE.id, "active") for w in running),
        observed={(w, WIDE.id): o for w, o in (observed or {}).items()},
        loaded_at={(w, WIDE.id): t for w, t in (loaded_at or {}).items()},
    )


def md1_rows(service_ms: float, batch: int, slo_ms: float) -> float:
    """Rows/s of batches of `batch` rows served in `service_ms` whose M/D/1 mean latency
    W = s + ρs/(2(1 − ρ)) equals the SLO (Pollaczek–Khinchine, solved for ρ by hand)."""
    k = 2 * (slo_ms - service_ms) / service_ms  # ρ/(1 − ρ)
    return batch * 1000 / service_ms * k / (1 + k)


def test_capacity_is_the_rate_whose_predicted_mean_meets_the_slo_at_the_best_batch() -> None:
    # SLO 20 ms → 10 ms for one batch's p99: batches 1 and 4 fit, 16 (12 ms) does not. SERF (M/D/1 over
    # batches): batch 4 (6 ms) keeps a 20 ms mean up to ρ = 14/17, 549 rows/s; batch 1 (4 ms) only 222.
    # The profile's throughput at batch 4 (667 rows/s) is where the queue grows without bound.
    assert slo_batch(WIDE, 20.0) == 4
    cap = instance_capacity(WIDE, 20.0)
    assert cap.rows_per_s == pytest.approx(md1_rows(6.0, 4, 20.0), rel=2e-3)
    assert md1_rows(6.0, 4, 20.0) == pytest.approx(4000 / 6.0 * 14 / 17)
    assert cap.batch == 4 and cap.rows_per_s < throughput(WIDE, 4)
    assert cap.predicted_ms(cap.rows_per_s) == pytest.approx(20.0, rel=1e-2)
    assert cap.predicted_ms(0.0) == pytest.approx(6.0)
    # no SLO: the max batch, i.e. the profiled saturation
    assert instance_capacity(WIDE, None).rows_per_s == pytest.approx(3848.0)
    # nothing fits even a lone query: the variant cannot serve at all
    assert slo_batch(WIDE, 4.0) == 0 and instance_capacity(WIDE, 4.0).rows_per_s == 0.0


def test_a_busy_instance_is_held_to_the_batches_it_forms_and_slowed_by_its_neighbours() -> None:
    # Kept busy (90 %) yet forming batches of 1, 2× slower than profiled: batches of 1 in 8 ms, a 20 ms
    # mean up to ρ = 3/4, 93.75 rows/s (its service rate is 125). An idle instance's small batches say
    # nothing.
    busy = Observed(served_rps=240, mean_batch=1.0, busy=0.9, slowdown=2.0)
    assert instance_capacity(WIDE, 20.0, busy).rows_per_s == pytest.approx(md1_rows(8.0, 1, 20.0), rel=2e-3)
    assert md1_rows(8.0, 1, 20.0) == pytest.approx(93.75)
    assert service_rate(WIDE, 20.0, busy) == pytest.approx(throughput(WIDE, 1) / 2)
    idle = Observed(served_rps=5, mean_batch=1.0, busy=0.02)
    assert instance_capacity(WIDE, 20.0, idle).rows_per_s == pytest.approx(md1_rows(6.0, 4, 20.0), rel=2e-3)


@pytest.mark.parametrize("policy", [greedy.plan, ilp.plan])
def test_shed_demand_makes_the_planner_scale_up(policy: PolicyFn) -> None:
    # 600 rows/s were dispatched, but 1,000 arrived: 400 were shed (503). At the SLO's batch one
    # instance carries 549 rows/s within the SLO: enough for what was dispatched, not for what arrived.
    seen = snap(1000.0, ["w1"], shed=400.0, missed=0.4)
    decisions = [d for d in policy(seen, {}, CONFIG).decisions if d.action != "request_worker"]
    (d,) = decisions
    assert d.action == "replicate" and d.loads and all(vid == WIDE.id for vid, _ in d.loads)
    assert "offered 1,000 rows/s incl. 400 shed" in d.reason and "batch ~4" in d.reason


def test_the_max_batch_profile_no_longer_hides_an_overload() -> None:
    # 1,500 rows/s under a 20 ms SLO: the max-batch profile (3,848 rows/s) says one instance is plenty;
    # at batch 4 it carries 549 within the SLO's mean, so three are needed (1,575 / 549 → 3).
    (d,) = greedy.plan(snap(1500.0, ["w1"]), {}, CONFIG).decisions
    assert d.action == "replicate" and len(d.loads) == 2
    assert "capacity under the 20 ms SLO: 549 rows/s (w.f32 ×1 at batch ~4" in d.reason


def test_misses_on_busy_instances_scale_up_though_the_estimate_says_it_fits() -> None:
    # 400 rows/s fits 549 on paper, but 30 % of queries were late while the instance was busy: the
    # goodput (280 rows/s) stands in for the capacity.
    busy = {"w1": Observed(served_rps=400, mean_batch=4, busy=0.95)}
    (d,) = greedy.plan(snap(400.0, ["w1"], late=120.0, missed=0.3, observed=busy), {}, CONFIG).decisions
    assert d.action == "replicate"
    assert "only 280 rows/s met the SLO (30% missed)" in d.reason
    # …but not while its newest instance has only just appeared (the misses predate it)
    young = snap(400.0, ["w1"], late=120.0, missed=0.3, observed=busy, loaded_at={"w1": 999.0})
    assert greedy.plan(young, {}, CONFIG).decisions == ()
    # …nor when the instances idle (late for another reason: more capacity would not help)
    idle = {"w1": Observed(served_rps=400, mean_batch=1, busy=0.3)}
    assert greedy.plan(snap(400.0, ["w1"], late=120.0, missed=0.3, observed=idle), {}, CONFIG).decisions == ()


def test_no_removal_while_queries_miss_their_slo_and_the_event_says_so() -> None:
    # Two instances for 100 rows/s: one would go, but 12 % of the window's queries were late.
    missing = snap(100.0, ["w1", "w2"], late=12.0, missed=0.12)
    (held,) = greedy.plan(missing, {"w:remove:w.f32": 0.0}, CONFIG).decisions
    assert held.action == "hold" and not held.unloads and not held.loads
    assert held.reason.startswith("held: not removing w.f32 while 12% of queries missed their SLO")
    # the ILP removes nothing either
    assert all(not d.unloads for d in ilp.plan(missing, {"w:ilp:w.f32 -1": 0.0}, CONFIG).decisions)
    # once the window is clean, the removal is proposed and, after T_v, carried out
    clean = snap(100.0, ["w1", "w2"])
    (removed,) = greedy.plan(clean, {"w:remove:w.f32": 0.0}, CONFIG).decisions
    assert removed.action == "remove"


def test_no_downgrade_while_queries_miss_their_slo() -> None:
    cheap = replace(WIDE, id="w.int8", cost_per_query=1e-8, saturation_qps=3848.0)
    missing = snap(100.0, ["w1"], late=12.0, missed=0.12)
    missing = replace(missing, demands=(replace(missing.demands[0], variants=(WIDE, cheap)),))
    (held,) = greedy.plan(missing, {"w:downgrade:w.int8": 0.0}, CONFIG).decisions
    assert held.action == "hold" and held.reason.startswith("held: not downgrading w.f32 while 12%")


@pytest.mark.parametrize("policy", [greedy.plan, ilp.plan])
def test_a_recently_loaded_instance_is_not_removed(policy: PolicyFn) -> None:
    # w2's instance appeared 10 s ago (a scale-up, or a query with nothing else to run on): the idle
    # load would let it go, but not before it is 30 s old; w1's older one may go instead.
    recent = snap(10.0, ["w1", "w2"], loaded_at={"w1": 0.0, "w2": 990.0})
    pending = {"w:remove:w.f32": 0.0, "w:ilp:w.f32 -1": 0.0}
    (d,) = [d for d in policy(recent, pending, CONFIG).decisions if d.unloads]
    assert d.unloads == ((WIDE.id, "w1"),)
    both = snap(10.0, ["w1", "w2"], loaded_at={"w1": 985.0, "w2": 990.0})
    decisions = policy(both, pending, CONFIG).decisions
    assert all(not d.unloads for d in decisions)
    if policy is greedy.plan:
        (held,) = decisions
        assert held.reason == "held: not removing w.f32: loaded less than 30 s ago"


def test_a_full_batch_slower_than_the_slo_no_longer_rules_a_variant_out() -> None:
    # Under a 15 ms SLO a full batch of 64 (20 ms p99) would miss it, but batches of 4 fit: the variant
    # serves at that batch and the planner loads it for the model's first load.
    first = replace(snap(300.0, [], slo_ms=15.0), instances=())
    (d,) = greedy.plan(first, {}, CONFIG).decisions
    assert d.action == "load" and d.loads[0][0] == WIDE.id


@pytest.mark.parametrize("policy", [greedy.plan, ilp.plan])
def test_an_idle_sibling_is_judged_as_slowed_as_what_runs_beside_it(policy: PolicyFn) -> None:
    # A second form of the same model, 5 % slower by its profile and a little dearer. The running one is
    # observed 2× slower than its profile (the machine is busy). Judged by its idle profile the sibling
    # looked 1.9× faster than what runs: the planner "upgraded" to it, then back, tick after tick. It
    # meets the same machines, so it takes the same slowdown, and the planner replicates what runs.
    sibling = replace(
        WIDE,
        id="w.f32-extended",
        latencies=tuple(replace(p, p50_ms=p.p50_ms * 1.05, p99_ms=p.p99_ms * 1.05) for p in WIDE.latencies),
        saturation_qps=WIDE.saturation_qps / 1.05,
        cost_per_query=WIDE.cost_per_query * 1.1,  # a little dearer per second than WIDE
    )
    # 500 rows/s: WIDE slowed 2× carries 190 within the SLO (M/D/1 at batch 4 in 12 ms), the sibling 171:
    # three instances of WIDE, one per worker.
    base = snap(
        500.0, ["w0"], observed={"w0": Observed(served_rps=180, mean_batch=4, busy=0.95, slowdown=2.0)}
    )
    demand = replace(base.demands[0], variants=(WIDE, sibling))
    decisions = policy(replace(base, demands=(demand,)), {}, CONFIG).decisions
    assert decisions, "an overload must scale up"
    loaded = {vid for d in decisions for vid, _ in d.loads}
    assert loaded == {WIDE.id}, [d.reason for d in decisions]
    assert all(d.action == "replicate" for d in decisions)
