"""The model autoscaler's parity step, pure: ⌈m/k⌉ parity instances for m instances of the model, placed
away from the model's workers while there is such a worker, none for a model that has no instance."""

from __future__ import annotations

from dataclasses import replace

from infaas.policy.selection import InstanceView
from services.planner.loops.parity import parity_loads, stale_parity
from tests.unit.planner.autoscale_fixtures import A, B, snapshot

PARITY = replace(A, id="m.parity-k2-g1-onnxruntime-fp32-cpu", parity_k=2, dominated=True)


def test_no_parity_instance_for_a_model_with_no_instance() -> None:
    assert parity_loads({"m": PARITY}, snapshot(10, [])) == []


def test_one_parity_instance_for_two_instances_away_from_them() -> None:
    loads = parity_loads({"m": PARITY}, snapshot(10, [("m.a", "w1"), ("m.b", "w2")]))
    assert [(p.parity.id, p.worker.id) for p in loads] == [(PARITY.id, "w3")]
    assert "2 instance(s) of m need 1 parity instance(s), 0 loaded" in loads[0].reason
    assert "a worker without the model" in loads[0].reason


def test_enough_parity_instances_loads_nothing_and_a_third_instance_asks_for_a_second() -> None:
    running = [("m.a", "w1"), ("m.b", "w2"), (PARITY.id, "w3")]
    assert parity_loads({"m": PARITY}, snapshot(10, running)) == []
    loads = parity_loads({"m": PARITY}, snapshot(10, [*running, ("m.a", "w2")]))
    # ⌈3/2⌉ = 2: the second goes to a worker of the model (none is free of it), the least loaded one.
    assert [p.worker.id for p in loads] == ["w1"]
    assert "a worker of the model (no other)" in loads[0].reason


def test_a_loading_parity_instance_counts_and_a_failed_one_does_not() -> None:
    base = snapshot(10, [("m.a", "w1")])
    loading = replace(base, instances=(*base.instances, InstanceView("w2", PARITY.id, "loading")))
    assert parity_loads({"m": PARITY}, loading) == []
    failed = replace(base, instances=(*base.instances, InstanceView("w2", PARITY.id, "failed")))
    assert [p.worker.id for p in parity_loads({"m": PARITY}, failed)] == ["w3"]
    assert B.parity_k == 0  # the model's own variants are not parity models


def test_instances_of_parity_models_no_longer_published_are_stale() -> None:
    old = "m.parity-k3-g1-onnxruntime-fp32-cpu"
    running = [("m.a", "w1"), (PARITY.id, "w3"), (old, "w2")]
    assert stale_parity({"m": PARITY}, snapshot(10, running)) == [(old, "w2")]
    assert stale_parity({}, snapshot(10, running)) == [(PARITY.id, "w3"), (old, "w2")]
    assert stale_parity({"m": PARITY}, snapshot(10, running[:2])) == []
