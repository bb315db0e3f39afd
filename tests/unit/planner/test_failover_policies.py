"""FailLite's proactive ILP (`backups.place_warm`) and progressive failover (`failover.progressive`,
Algorithm 1) against placements computed by hand in the comments."""

from __future__ import annotations

from dataclasses import replace

import pytest

from infaas.policy.selection import InstanceView
from infaas.schemas.variants import VariantProfile
from services.planner.policies.backups import AppTerms, Family, Room, families, place_warm
from services.planner.policies.failover import match, progressive
from tests.factories import variant_profile

MB = 1 << 20


def v(vid: str, memory_mb: int, accuracy: float) -> VariantProfile:
    model = vid.split(".")[0]
    return variant_profile(id=vid, model=model, peak_memory_bytes=memory_mb * MB, accuracy=accuracy)


A_FULL, A_SMALL = v("a.full", 400, 0.9), v("a.small", 100, 0.81)  # normalized: 1.0, 0.9
B_FULL, B_SMALL = v("b.full", 300, 0.8), v("b.small", 100, 0.6)  # normalized: 1.0, 0.75


def room(worker: str, free_mb: int) -> Room:
    return Room(worker, "cpu", free_mb * MB)


def test_ilp_trades_one_apps_accuracy_for_a_busier_ones() -> None:
    # A (10 q/s) on w1, B (1 q/s) on w2; free: w1 250, w2 300, w3 400 MB; budget 0.9 × 950 = 855.
    # A full on w3 (11 × 1.0) + B small on w1 (2 × 0.75) = 12.5 beats
    # B full on w3 (2 × 1.0) + A small on w2 or w3 (11 × 0.9) = 11.9.
    families = [
        Family("A", True, (A_FULL, A_SMALL), frozenset({"w1"}), rate_qps=10.0),
        Family("B", True, (B_FULL, B_SMALL), frozenset({"w2"}), rate_qps=1.0),
        Family("C", False, (v("c.full", 50, 0.9),), frozenset({"w3"})),
    ]
    plan = place_warm(families, [room("w1", 250), room("w2", 300), room("w3", 400)])
    placed = {(b.app, b.variant, b.worker) for b in plan.backups}
    assert placed == {("A", "a.full", "w3"), ("B", "b.small", "w1")}
    assert plan.unplaced == {}
    assert plan.budget_bytes == int(0.9 * 950 * MB)
    b = next(b for b in plan.backups if b.app == "B")
    assert b.accuracy == pytest.approx(0.75)
    assert "smaller variant than b.full" in b.reason and "away from its primary on w2" in b.reason


def test_ilp_keeps_alpha_for_cold_loads() -> None:
    # One worker besides the primary, 500 MB free: the budget is 0.9 × 500 = 450, so a 480 MB full-size
    # backup does not go in though the worker has room for it; the 100 MB one does.
    big = v("a.big", 480, 0.9)
    families = [Family("A", True, (big, A_SMALL), frozenset({"w1"}))]
    plan = place_warm(families, [room("w1", 0), room("w2", 500)], alpha=0.1)
    assert [(b.variant, b.worker) for b in plan.backups] == [("a.small", "w2")]
    plan = place_warm(families, [room("w1", 0), room("w2", 500)], alpha=0.0)
    assert [(b.variant, b.worker) for b in plan.backups] == [("a.big", "w2")]


def test_ilp_never_places_beside_the_primary() -> None:
    families = [Family("A", True, (A_FULL, A_SMALL), frozenset({"w1"}))]
    plan = place_warm(families, [room("w1", 4000)])
    assert plan.backups == ()
    assert "no worker other than its primary's" in plan.unplaced["A"]


def test_ilp_leaves_out_the_app_that_fits_nowhere_and_places_the_rest() -> None:
    # Both need w3 (w1, w2 are their primaries, full); w3 takes one 400 MB backup: A's rate wins it.
    families = [
        Family("A", True, (A_FULL,), frozenset({"w1"}), rate_qps=5.0),
        Family("B", True, (v("b.only", 400, 0.8),), frozenset({"w2"}), rate_qps=1.0),
    ]
    plan = place_warm(families, [room("w1", 0), room("w2", 0), room("w3", 400)], alpha=0.0)
    assert [(b.app, b.worker) for b in plan.backups] == [("A", "w3")]
    assert "once the other critical apps' backups are placed" in plan.unplaced["B"]


def test_ilp_backs_up_only_apps_that_are_served() -> None:
    families = [Family("A", True, (A_FULL,), frozenset())]
    plan = place_warm(families, [room("w1", 4000)])
    assert plan.backups == () and "nothing to back up" in plan.unplaced["A"]


def test_ilp_keeps_the_backup_already_loaded_on_a_tie() -> None:
    families = [Family("A", True, (A_FULL,), frozenset({"w1"}))]
    rooms = [room("w1", 0), room("w2", 1000), room("w3", 1000)]
    for worker in ("w2", "w3"):
        plan = place_warm(families, rooms, current={"A": ("a.full", worker)})
        assert [(b.variant, b.worker) for b in plan.backups] == [("a.full", worker)]


X_L, X_M, X_S = v("x.l", 400, 0.9), v("x.m", 200, 0.85), v("x.s", 100, 0.7)
Y_L, Y_S = v("y.l", 300, 0.8), v("y.s", 100, 0.6)


def test_match_takes_the_largest_variant_within_delta() -> None:
    assert match((X_L, X_M, X_S), X_L, 1.0).id == "x.l"
    assert match((X_L, X_M, X_S), X_L, 0.6).id == "x.m"  # ≤ 240 MB
    assert match((X_L, X_M, X_S), X_L, 0.1).id == "x.s"  # nothing ≤ 40 MB: the smallest


def test_algorithm_1_by_hand() -> None:
    # C = 350 + 250 = 600, D = 400 + 300 = 700, δ = 0.857: X matches x.m (≤ 343), Y y.s (≤ 257).
    # X (busier) first: x.m worst-fit on w2 (350 → 150); Y: y.s on w3 (250 → 150).
    # Upgrade: w2 with x.m given back has 350 (x.l is 400: stays x.m); w3 has 250 (y.l is 300: stays).
    # First loads: X's smallest x.s fits beside x.m on w2 (150 left); Y's target is its smallest.
    families = [
        Family("X", False, (X_L, X_M, X_S), rate_qps=5.0),
        Family("Y", False, (Y_L, Y_S), rate_qps=1.0),
    ]
    plan = progressive(families, [room("w2", 350), room("w3", 250)])
    assert plan.delta == pytest.approx(600 / 700)
    got = {r.app: r for r in plan.recoveries}
    assert got["X"].target == ("x.m", "w2") and got["X"].first == ("x.s", "w2")
    assert got["Y"].target == ("y.s", "w3") and got["Y"].first is None
    assert got["X"].accuracy == pytest.approx(0.85 / 0.9)
    assert "δ = 0.86 matched x.m" in got["X"].reason and "x.s loads first on w2" in got["X"].reason
    assert plan.unrecovered == {}


def test_algorithm_1_upgrades_where_room_is_left() -> None:
    # C = 500 + 100 = 600, D = 800, δ = 0.75: both match their 100 MB variant (≤ 300).
    # X: x.s worst-fit on w2 (500 → 400); Y: y.s worst-fit on w2 (400 → 300; w3 has 100).
    # Upgrade X: w2 with x.s back has 400 — x.l fits (w2 → 0); Y: w2 with y.s back has 100 — stays y.s.
    # X loads x.s first: no room left on w2, so on w3 (100).
    xl, xs = v("x.l", 400, 0.9), v("x.s", 100, 0.7)
    yl, ys = v("y.l", 400, 0.8), v("y.s", 100, 0.6)
    families = [Family("X", False, (xl, xs), rate_qps=2.0), Family("Y", False, (yl, ys), rate_qps=1.0)]
    plan = progressive(families, [room("w2", 500), room("w3", 100)])
    got = {r.app: r for r in plan.recoveries}
    assert plan.delta == pytest.approx(0.75)
    assert got["X"].target == ("x.l", "w2") and got["X"].first == ("x.s", "w3")
    assert "upgraded to x.l" in got["X"].reason
    assert got["Y"].target == ("y.s", "w2") and got["Y"].first is None


def test_algorithm_1_says_which_app_it_could_not_recover() -> None:
    families = [Family("X", False, (X_L, X_S), rate_qps=1.0), Family("Z", False, ())]
    plan = progressive(families, [room("w2", 50)])
    assert plan.recoveries == ()
    assert "no live worker has room for any variant up to x.s" in plan.unrecovered["X"]
    assert "no eligible variant" in plan.unrecovered["Z"]


def test_algorithm_1_never_places_a_variant_twice_on_one_worker() -> None:
    # w2 already runs x.l (another app's primary of the same variant id): x.l must go to w3.
    families = [Family("X", False, (X_L,), rate_qps=1.0)]
    plan = progressive(families, [Room("w2", "cpu", 900 * MB, frozenset({"x.l"})), room("w3", 400)])
    assert plan.recoveries[0].target == ("x.l", "w3")


def test_families_leave_out_what_queries_would_not_get() -> None:
    # b is dominated (selection takes it only when nothing undominated meets a query), q is int8 below
    # the model's reference (a non-lossy app's queries never get it); the backups on w2 are not primaries.
    a = variant_profile(id="m.a", reference_accuracy=0.9, accuracy=0.9)
    b = replace(a, id="m.b", dominated=True)
    q = replace(a, id="m.q", accuracy=0.85)
    instances = [InstanceView("w1", "m.a", "active"), InstanceView("w2", "m.b", "active")]
    (family,) = families(
        [a, b, q], instances, {"a": AppTerms(critical=True)}, {"m": 3.0}, backups=[("m.b", "w2")]
    )
    assert [v.id for v in family.variants] == ["m.a"]
    assert family.primaries == frozenset({"w1"}) and family.critical and family.rate_qps == 3.0
    (lossy,) = families([a, b, q], instances, {"a": AppTerms(lossy=True)}, {})
    assert [v.id for v in lossy.variants] == ["m.a", "m.q"]


def test_a_familys_members_are_all_its_variants_and_an_apps_groups_do_not_share_them() -> None:
    # What a failed worker took from a family is found among all its variants, the ones no backup may
    # be (too slow for the SLO, dominated) included; an app's groups by signature and task are apart.
    a = v("m.a", 100, 0.9)
    slow = variant_profile(id="m.slow", model="m", accuracy=0.9, latencies=((1, 500.0, 600.0),))
    other = variant_profile(id="n.a", model="n", accuracy=0.9, signature_key="y:float32:3")
    reg = variant_profile(id="r.a", model="r", accuracy=0.9, task="regression")
    groups = families([a, slow, other, reg], [], {"a": AppTerms(slo_ms=50.0)}, {})
    by_label = {f.app: f for f in groups}
    assert set(by_label) == {"a[x:float32:4]", "a[x:float32:4][regression]", "a[y:float32:3]"}
    main = by_label["a[x:float32:4]"]
    assert [x.id for x in main.variants] == ["m.a"]  # the slow one is no backup…
    assert main.members == {"m.a", "m.slow"}  # …but a failure may still take it
    assert by_label["a[y:float32:3]"].members == {"n.a"}
    assert by_label["a[x:float32:4][regression]"].members == {"r.a"}
