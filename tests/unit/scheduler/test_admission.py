"""Deadline-aware admission as pure logic: frozen inputs (queue ahead, observed service time, deadline)
→ admit, or shed with the numbers that say why; and how answers teach the observed service time."""

from __future__ import annotations

import time

import numpy as np
import pytest

from infaas.clients.envelope import Query
from infaas.core.errors import Overloaded
from infaas.policy.selection import Decision, Requirements
from services.scheduler.admission import Prediction, predict, retry_after_s
from services.scheduler.answers import shed
from services.scheduler.service_times import ServiceTime
from tests.factories import variant_profile


def _predict(
    *,
    ahead: float,
    rows: int = 1,
    per_row: float = 0.9,
    residual: float = 0.0,
    deadline: float = 50.0,
    profiled: float = 1.0,
    done: float = 0.0,
    queued: bool = True,
) -> Prediction:
    service = ServiceTime(ms_per_row=per_row, residual_ms=residual)
    return predict(
        variant="m.v",
        rows=rows,
        rows_ahead=ahead,
        profiled_ms=profiled,
        service=service,
        deadline_ms=deadline,
        done_ms=done,
        queued=queued,
    )


def test_a_query_that_fits_behind_the_queue_is_admitted() -> None:
    p = _predict(ahead=40)  # 40 × 0.9 + 1 = 37 ms ≤ 50
    assert p.admits and p.ms == pytest.approx(37.0)


def test_a_query_the_queue_would_make_late_is_shed_with_the_numbers() -> None:
    p = _predict(ahead=199)  # 199 × 0.9 + 1 = 180.1 ms > 50
    assert not p.admits
    assert p.why() == (
        "predicted 180.1 ms on m.v (queue 199 rows ahead at 0.9 ms/row observed, 0.0 ms of it under way, "
        "+ own run 1.0 ms + 0.0 ms unexplained) > deadline 50.0 ms"
    )
    assert p.details()["predicted_ms"] == pytest.approx(180.1) and p.details()["rows_ahead"] == 199
    assert retry_after_s(p) == 1.0  # never under a second: the header is whole seconds


def test_a_miss_smaller_than_the_rounding_still_reads_as_a_miss() -> None:
    # 165.6664 × 0.9 + 0.9 = 149.99976 ms > 149.9995: a miss by 0.26 µs, which plain rounding shows as
    # "150.0 > 150.0" in the error's body and its message.
    p = _predict(ahead=165.6664, profiled=0.0, deadline=149.9995)
    assert not p.admits
    d = p.details()
    assert isinstance(d["predicted_ms"], float) and isinstance(d["deadline_ms"], float)
    assert d["predicted_ms"] > d["deadline_ms"]
    assert (d["predicted_ms"], d["deadline_ms"]) == (150.0, 149.999)
    assert "predicted 150.0 ms" in p.why() and "> deadline 149.9 ms" in p.why()
    fits = _predict(ahead=165.6664, profiled=0.0, deadline=150.0)  # 149.99976 ≤ 150: plainly rounded
    assert fits.admits and "predicted 150.0 ms" in fits.why() and "<= deadline 150.0 ms" in fits.why()
    assert (fits.details()["predicted_ms"], fits.details()["deadline_ms"]) == (150.0, 150.0)


def test_work_done_on_the_rows_ahead_since_they_were_admitted_is_not_counted_again() -> None:
    # 60 rows ahead (54 ms of work) admitted 30 ms ago: 24 ms are left, + 1 ms own run ≤ 50.
    p = _predict(ahead=60, done=30.0)
    assert p.admits and p.ms == pytest.approx(25.0)
    assert "30.0 ms of it under way" in p.why() and p.details()["done_ms"] == 30.0
    assert not _predict(ahead=60).admits  # counted whole: 55 ms > 50
    # Longer under way than the model says it takes: nothing left ahead, never negative.
    assert _predict(ahead=60, done=500.0).modelled_ms == pytest.approx(1.0)
    assert _predict(ahead=0, done=30.0).done_ms == 0.0  # nothing ahead: nothing done on it


def test_the_spread_of_the_unexplained_time_counts_only_once_a_queue_has_formed() -> None:
    service = ServiceTime(ms_per_row=0.9, residual_ms=5.0, deviation_ms=10.0)
    assert service.margin_ms == 25.0 and service.mean_margin_ms == 5.0
    kw = {"variant": "m.v", "rows": 1, "rows_ahead": 40, "profiled_ms": 1.0, "service": service}
    # Behind what the instances are running: the average alone, 37 + 5 = 42 ms ≤ 50, admitted.
    alone = predict(**kw, deadline_ms=50.0, queued=False)
    assert alone.overhead_ms == 5.0 and alone.admits
    # A queue has formed: the spread too, 37 + 25 = 62 ms > 50, shed.
    behind = predict(**kw, deadline_ms=50.0, queued=True)
    assert behind.overhead_ms == 25.0 and not behind.admits


def test_retry_after_covers_the_excess_work() -> None:
    assert retry_after_s(_predict(ahead=5000)) == pytest.approx((5000 * 0.9 + 1 - 50) / 1000)


def test_a_lone_query_is_never_shed_for_load() -> None:
    # Nothing ahead: a miss is the SLO's, not the queue's, and its policy applies when answered.
    p = _predict(ahead=0, profiled=80.0)
    assert p.ms > p.deadline_ms and p.admits


def test_the_own_run_is_never_less_than_its_profile_nor_its_rows_at_the_observed_rate() -> None:
    assert _predict(ahead=0, rows=4, profiled=10.0).own_ms == 10.0
    assert _predict(ahead=0, rows=100, profiled=10.0).own_ms == pytest.approx(90.0)


def test_the_unexplained_time_counts_when_positive_only() -> None:
    late = _predict(ahead=40, residual=20.0)  # 37 + 20 > 50
    assert late.overhead_ms == 20.0 and not late.admits
    assert _predict(ahead=40, residual=-30.0).overhead_ms == 0.0


def test_a_spent_deadline_sheds_a_queued_query() -> None:
    assert not _predict(ahead=1, deadline=-1.0).admits


def test_service_time_starts_from_the_profile_and_follows_how_fast_the_queue_drains() -> None:
    service = ServiceTime.from_profile(variant_profile(saturation_qps=1000.0))  # 1 ms per row idle
    assert service.ms_per_row == pytest.approx(1.0)
    now = 0.0
    for _ in range(100):  # busy: batches of four 8-row answers every 48 ms, 1.5 ms a row
        now += 0.048
        for _ in range(4):
            service.drained(now, rows=8, pending_after=64)
    assert service.ms_per_row == pytest.approx(1.5, rel=0.02)


def test_idle_time_between_answers_is_not_service_time() -> None:
    service = ServiceTime(ms_per_row=1.0)
    now = 0.0
    for _ in range(50):  # each answer leaves nothing in flight: the gaps are idle, not slow service
        now += 0.5
        service.drained(now, rows=8, pending_after=0)
    assert service.ms_per_row == 1.0


def test_the_residual_follows_actual_minus_modelled() -> None:
    service = ServiceTime(ms_per_row=1.0)
    for _ in range(100):
        service.answered(actual_ms=12.0, modelled_ms=10.0)
    assert service.residual_ms == pytest.approx(2.0, rel=1e-3)
    assert service.deviation_ms == pytest.approx(0.0, abs=1e-3) and service.margin_ms == pytest.approx(
        2.0, 1e-3
    )


def test_the_margin_adds_the_spread_of_answers() -> None:
    service = ServiceTime(ms_per_row=1.0)
    for i in range(400):  # answers 4 ms early and 4 ms late in turn: the average is 0, the spread 4
        service.answered(actual_ms=10.0 + (4.0 if i % 2 else -4.0), modelled_ms=10.0)
    assert abs(service.residual_ms) < 0.5 and service.deviation_ms == pytest.approx(4.0, rel=0.1)
    assert service.margin_ms == pytest.approx(service.residual_ms + 2 * service.deviation_ms)
    assert _predict(ahead=40, residual=-30.0).overhead_ms == 0.0  # a pessimistic model is not credited


def _shed_query(policy: str) -> Query:
    x = np.zeros((2, 4), dtype=np.float32)
    return Query(
        "model", "m", "x:float32:4", Requirements(slo_ms=50.0), {"x": x}, "r1", "a",
        policy=policy, default_output={"y": [0.25, 0.75]}, cache=False,
    )  # fmt: skip


def test_a_shed_query_under_error_is_a_503_with_the_prediction() -> None:
    decision = Decision(variant_profile(), "active", None, "cheapest")
    with pytest.raises(Overloaded) as info:
        shed(decision, _shed_query("error"), time.perf_counter(), _predict(ahead=199))
    assert info.value.status == 503 and info.value.details["retry_after_s"] == 1.0
    assert info.value.details["predicted_ms"] == pytest.approx(180.1) and "180.1 ms" in str(info.value)


def test_a_shed_query_under_default_gets_the_default_output_at_once_and_why() -> None:
    decision = Decision(variant_profile(), "active", None, "cheapest")
    got = shed(decision, _shed_query("default"), time.perf_counter(), _predict(ahead=199))
    assert got.default is True and got.slo_met is False and got.worker == "none"
    assert got.outputs["y"].tolist() == [[0.25, 0.75], [0.25, 0.75]]
    assert got.reason.startswith("predicted 180.1 ms") and "default output at once" in got.reason
