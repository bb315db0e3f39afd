"""The gateway's budget of failed key verifications per client address (`gateway.limits`): a pure policy
over buckets and an injected clock."""

from __future__ import annotations

import pytest

from gateway.limits import FailureLimiter, FailurePolicy


def limiter(per_minute: int = 3, **options: int) -> tuple[FailureLimiter, list[float]]:
    now = [100.0]
    return FailureLimiter(FailurePolicy(per_minute), clock=lambda: now[0], **options), now


def test_an_address_may_fail_its_budget_then_waits_for_one_token() -> None:
    limits, _ = limiter(per_minute=3)
    for _ in range(3):
        assert limits.retry_after_s("10.0.0.1") == 0
        limits.failed("10.0.0.1")
    # Three failures spent the burst; one token comes back in 60 / 3 s.
    assert limits.retry_after_s("10.0.0.1") == pytest.approx(20.0)


def test_the_budget_refills_evenly_and_only_up_to_the_burst() -> None:
    limits, now = limiter(per_minute=3)
    for _ in range(3):
        limits.failed("a")
    now[0] += 5.0
    assert limits.retry_after_s("a") == pytest.approx(15.0)
    now[0] += 15.0
    assert limits.retry_after_s("a") == 0
    now[0] += 3600.0  # a long quiet time refills the burst, no more
    for _ in range(3):
        limits.failed("a")
    assert limits.retry_after_s("a") > 0


def test_addresses_are_limited_apart_and_none_is_never_limited() -> None:
    limits, _ = limiter(per_minute=1)
    limits.failed("a")
    limits.failed(None)
    assert limits.retry_after_s("a") > 0
    assert limits.retry_after_s("b") == 0
    assert limits.retry_after_s(None) == 0


def test_zero_per_minute_turns_the_limit_off() -> None:
    limits, _ = limiter(per_minute=0)
    for _ in range(100):
        limits.failed("a")
    assert limits.retry_after_s("a") == 0
    assert limits.buckets == {}


def test_memory_is_bounded_refilled_addresses_go_first_then_the_oldest() -> None:
    limits, now = limiter(per_minute=2, max_clients=2)
    limits.failed("old")
    now[0] += 120.0  # "old" is full again: nothing worth keeping
    limits.failed("b")
    limits.failed("c")
    assert set(limits.buckets) == {"b", "c"}
    limits.failed("d")  # all recent: the longest untouched ("b") goes
    assert set(limits.buckets) == {"c", "d"}
