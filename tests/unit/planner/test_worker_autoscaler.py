"""The worker autoscaler (INFaaS §4.2.3): each rule, the one-start-at-a-time guard, bounds, idle removal."""

from __future__ import annotations

from infaas.policy.selection import InstanceView, WorkerView
from services.planner.policies.worker_pool import WorkerConfig, WorkerSnapshot, plan

CONFIG = WorkerConfig(utilization=0.8, overloaded_share=0.8, idle_s=60, min_workers=1, max_workers=4)
GIB = 1 << 30


def w(wid: str, util: float = 0.1, used: int = 0, hardware: str = "cpu") -> WorkerView:
    return WorkerView(wid, hardware, f"http://{wid}", 2, GIB, used, util)


def i(wid: str, state: str = "active", vid: str = "m.a") -> InstanceView:
    return InstanceView(wid, vid, state)  # type: ignore[arg-type]


def snap(workers, instances, **kw) -> WorkerSnapshot:  # type: ignore[no-untyped-def]
    return WorkerSnapshot(now=kw.pop("now", 100.0), workers=tuple(workers), instances=tuple(instances), **kw)


def test_mean_cpu_utilization_above_80_percent_adds_a_worker() -> None:
    # (0.9 + 0.75) / 2 = 82.5 % > 80 %
    (d,) = plan(snap([w("a", 0.9), w("b", 0.75)], [i("a"), i("b")]), {}, CONFIG).decisions
    assert d.action == "add_worker" and d.hardware == "cpu"
    assert "mean CPU utilization of the 2 cpu worker(s) is 82% > 80%" in d.reason
    # (0.9 + 0.7) / 2 = 80 %: not above
    assert plan(snap([w("a", 0.9), w("b", 0.7)], [i("a"), i("b")]), {}, CONFIG).decisions == ()


def test_memory_above_80_percent_adds_a_worker() -> None:
    (d,) = plan(snap([w("a", used=int(0.85 * GIB))], [i("a")]), {}, CONFIG).decisions
    assert d.action == "add_worker" and "memory" in d.reason


def test_all_instances_interfered_adds_a_worker_of_that_kind_only() -> None:
    workers = [w("a"), w("b"), w("g", hardware="cuda")]
    instances = [i("a", "interfered"), i("b", "interfered", "m.b"), i("g", "active", "m.g")]
    (d,) = plan(snap(workers, instances), {}, CONFIG).decisions
    assert d.hardware == "cpu" and "all 2 instance(s) on cpu workers are interfered" in d.reason
    instances[1] = i("b", "active", "m.b")
    assert plan(snap(workers, instances), {}, CONFIG).decisions == ()


def test_more_than_80_percent_of_workers_overloaded_adds_a_worker() -> None:
    workers = [w(x) for x in "abcde"]
    # 4 of 5 = 80 %: not more than 80 %
    four = [i(x, "overloaded") for x in "abcd"] + [i("e")]
    assert plan(snap(workers, four), {}, CONFIG).decisions == ()
    five = [i(x, "overloaded") for x in "abcde"]
    (d,) = plan(snap(workers, five), {}, WorkerConfig(max_workers=10)).decisions
    assert "5 of 5 cpu worker(s) host an overloaded instance" in d.reason


def test_a_request_from_the_model_autoscaler_adds_a_worker() -> None:
    (d,) = plan(snap([w("a")], [i("a")], requests={"cuda": "no room for m.g"}), {}, CONFIG).decisions
    assert d.hardware == "cuda" and "no room for m.g" in d.reason


def test_one_start_at_a_time_and_never_above_max() -> None:
    busy = [w("a", 0.95)]
    assert plan(snap(busy, [i("a")], starting={"cpu": 1}), {}, CONFIG).decisions == ()
    full = [w(x, 0.95) for x in "abcd"]
    assert plan(snap(full, [i(x) for x in "abcd"]), {}, CONFIG).decisions == ()


def test_an_idle_worker_is_drained_after_the_cool_down_but_not_the_last_one() -> None:
    workers = [w("a"), w("b")]
    first = plan(snap(workers, [i("a")], now=100.0), {}, CONFIG)
    assert first.decisions == () and first.idle_since == {"b": 100.0}
    assert plan(snap(workers, [i("a")], now=159.0), first.idle_since, CONFIG).decisions == ()
    (d,) = plan(snap(workers, [i("a")], now=160.0), first.idle_since, CONFIG).decisions
    assert d.action == "drain_worker" and d.worker == "b"
    assert "hosted no instance for 60 s" in d.reason
    # an instance arriving resets the clock
    assert plan(snap(workers, [i("a"), i("b")], now=160.0), first.idle_since, CONFIG).idle_since == {}
    # min_workers: the only worker stays however idle
    assert plan(snap([w("a")], [], now=1000.0), {"a": 0.0}, CONFIG).decisions == ()


def test_draining_workers_are_not_counted_or_drained_twice() -> None:
    workers = [w("a"), w("b")]
    result = plan(snap(workers, [i("a")], now=500.0, draining=frozenset({"b"})), {"b": 0.0}, CONFIG)
    assert result.decisions == () and "b" not in result.idle_since
