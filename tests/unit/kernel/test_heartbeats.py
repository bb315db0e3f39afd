"""The heartbeat record (`infaas.data.heartbeats`): each part decodes what it encodes, a record that is
not one is refused naming what is wrong, and one bad record leaves out its worker, not every worker."""

from __future__ import annotations

import orjson
import pytest

from infaas.data.heartbeats import (
    InstanceReport,
    beat_at,
    observed_from,
    parse_workers,
    worker_from_hash,
    worker_mapping,
)
from infaas.policy.capacity import Observed
from infaas.policy.selection import InstanceView, WorkerView
from tests.factories import instance_report

WORKER = WorkerView("cpu-h-1", "cpu", "http://h:1", 4, 1 << 30, 123, 0.25, "h:9", "inc-1")


def _as_hash(mapping: dict[object, object]) -> dict[bytes, bytes]:
    """What Redis hands back for a hash written with `mapping`."""
    return {str(k).encode(): str(v).encode() for k, v in mapping.items()}


def test_an_instance_report_round_trips() -> None:
    report = instance_report("interfered", reason="batches take 3.1×", pending=2, served=12.5, concurrency=2)
    assert InstanceReport.decode(report.encode()) == report
    assert report.observed() == Observed(served_rps=12.5, mean_batch=0.0, busy=0.0, slowdown=1.0)


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"pending": "2"}, "'pending' is str"),
        ({"served": True}, "'served' is bool"),
        ({"state": "sleeping"}, "is not one of"),
        ({"reason": None}, "'reason' is NoneType"),
    ],
)
def test_a_report_with_a_wrong_value_is_refused(change: dict[str, object], why: str) -> None:
    doc = {**orjson.loads(instance_report().encode()), **change}
    with pytest.raises(ValueError, match=why):
        InstanceReport.decode(orjson.dumps(doc))


def test_a_report_missing_a_field_or_with_an_unknown_one_is_refused() -> None:
    doc = orjson.loads(instance_report().encode())
    del doc["concurrency"]
    with pytest.raises(ValueError, match="concurrency"):
        InstanceReport.decode(orjson.dumps(doc))
    with pytest.raises(ValueError, match="surprise"):
        InstanceReport.decode(orjson.dumps({**orjson.loads(instance_report().encode()), "surprise": 1}))
    with pytest.raises(ValueError, match="JSON object"):
        InstanceReport.decode(b"[1, 2]")


def test_the_worker_record_round_trips_with_its_time() -> None:
    info = _as_hash(worker_mapping(WORKER, now=1700000000.25))
    assert worker_from_hash("cpu-h-1", info) == WORKER
    assert beat_at(info) == 1700000000.25
    del info[b"push"]
    with pytest.raises(ValueError, match="without 'push'"):
        worker_from_hash("cpu-h-1", info)
    with pytest.raises(ValueError, match="heartbeat_at"):
        beat_at({})


def test_a_worker_whose_record_does_not_decode_is_left_out_and_the_others_read() -> None:
    good = (
        _as_hash(worker_mapping(WORKER, now=1.0)),
        {b"m.v": instance_report("active", pending=3).encode()},
    )
    bad = (_as_hash(worker_mapping(WORKER, now=1.0)), {b"m.v": b'{"state": "active"}'})
    gone: tuple[dict[bytes, bytes], dict[bytes, bytes]] = ({}, {})
    workers, instances = parse_workers(["cpu-h-1", "cpu-h-2", "cpu-h-3"], [good, bad, gone])
    assert [w.id for w in workers] == ["cpu-h-1"]
    assert instances == (InstanceView("cpu-h-1", "m.v", "active", 3, 1),)
    assert observed_from("cpu-h-2", bad[1]) == {}
    assert observed_from("cpu-h-1", good[1]) == {("cpu-h-1", "m.v"): Observed(0.0, 0.0, 0.0, 1.0)}
