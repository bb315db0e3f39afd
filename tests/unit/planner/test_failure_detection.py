"""The failure detector's pure rules (`infaas.policy.failure_detection`): silence is judged against the
detector's own echo, and a silent worker is failed only when a second signal (a probe of its port)
confirms it, or once it has been silent long enough to count as hung."""

from __future__ import annotations

import pytest

from infaas.policy.failure_detection import (
    late,
    late_after_s,
    missing_recently_seen,
    silent,
    unseen_for_ttl,
    verdict,
)


def test_no_echo_heard_declares_nobody_however_old_the_pulses() -> None:
    assert silent({"w1": 0.0, "w2": 5.0}, echo_sent_at=None, timeout_s=0.05) == ()


def test_silence_is_measured_to_the_echo_not_to_now() -> None:
    heard = {"w1": 10.00, "w2": 10.04}
    # The echo sent at 10.07 came back: w1 was silent 70 ms by then (past 50 ms), w2 only 30 ms.
    assert silent(heard, echo_sent_at=10.07, timeout_s=0.05) == ("w1",)
    # An older echo (the channel known to work only until 10.03) declares nobody yet.
    assert silent(heard, echo_sent_at=10.03, timeout_s=0.05) == ()


@pytest.mark.parametrize(
    ("probe", "words"),
    [("refused", "refuses connections"), ("unanswered", "does not answer"), (None, "no address")],
)
def test_a_silent_worker_is_failed_when_its_port_confirms_it(probe: str | None, words: str) -> None:
    why = verdict(0.06, probe, hung_s=0.5)  # type: ignore[arg-type]
    assert why is not None and words in why


def test_a_silent_worker_whose_port_accepts_is_a_stall_until_it_counts_as_hung() -> None:
    assert verdict(0.06, "accepted", hung_s=0.5) is None
    assert verdict(0.499, "accepted", hung_s=0.5) is None
    why = verdict(0.5, "accepted", hung_s=0.5)
    assert why is not None and why.startswith("hung") and "500 ms" in why


def test_the_snapshot_fallback_declares_only_a_heartbeat_silent_for_its_ttl_while_redis_answered() -> None:
    # Missing from the read because its heartbeat aged out: declared at once.
    assert unseen_for_ttl(100.0, 0.0, 103.0, 3.0)
    # Missing because Redis came back empty a moment after its last heartbeat: it beats again soon.
    assert not unseen_for_ttl(100.0, 0.0, 101.0, 3.0)
    # Redis was unreachable for longer than the TTL: the outage does not count against the worker...
    assert not unseen_for_ttl(100.0, 110.0, 111.0, 3.0)
    # ...but a worker still silent a TTL after Redis answered again is gone.
    assert unseen_for_ttl(100.0, 110.0, 113.0, 3.0)


def test_a_worker_the_store_lost_within_its_ttl_is_missing_until_the_ttl_passes() -> None:
    seen: dict[str, float] = {}
    missing, seen = missing_recently_seen(seen, {"a": 100.0, "b": 100.5}, now=101, reachable_since=0, ttl_s=5)
    assert missing == () and seen == {"a": 100.0, "b": 100.5}
    # Redis restarted empty: neither is listed. Both heartbeated less than a TTL ago.
    missing, seen = missing_recently_seen(seen, {}, now=102, reachable_since=0, ttl_s=5)
    assert missing == ("a", "b")
    # `a` heartbeats again; `b` does not, and once its last heartbeat is a TTL old it is no longer waited for.
    missing, seen = missing_recently_seen(seen, {"a": 102.5}, now=104, reachable_since=0, ttl_s=5)
    assert missing == ("b",)
    missing, seen = missing_recently_seen(seen, {"a": 105.0}, now=105.6, reachable_since=0, ttl_s=5)
    assert missing == () and seen == {"a": 105.0}


def test_a_listed_worker_that_stopped_heartbeating_or_departed_is_never_missing() -> None:
    seen = {"dead": 100.0, "left": 100.0}
    # `dead` stays listed with its old heartbeat (its TTL decides); `left` has score 0 (left or declared).
    missing, seen = missing_recently_seen(
        seen, {"dead": 100.0, "left": 0.0}, now=101, reachable_since=0, ttl_s=5
    )
    assert missing == () and seen == {"dead": 100.0}


def test_the_time_redis_was_away_does_not_count_against_a_lost_worker() -> None:
    # Last heartbeat 10 s ago, but reads came back only 1 s ago: it still has the TTL to heartbeat.
    missing, _ = missing_recently_seen({"a": 90.0}, {}, now=100, reachable_since=99, ttl_s=5)
    assert missing == ("a",)
    missing, _ = missing_recently_seen({"a": 90.0}, {}, now=104.5, reachable_since=99, ttl_s=5)
    assert missing == ()


def test_the_detector_echoes_only_while_some_worker_is_late() -> None:
    after = late_after_s(0.025, misses=2)
    assert after == pytest.approx(0.0375)
    heard = {"w1": 10.000, "w2": 10.020}
    assert not late(heard, now=10.030, after_s=after)  # both pulsed within 1.5 intervals
    assert late(heard, now=10.040, after_s=after)  # w1 is 40 ms behind
    assert not late({}, now=99.0, after_s=after)  # nobody to watch: no echo


def test_late_never_comes_after_silent() -> None:
    # With one miss a worker is silent after one interval; the echoes must have started by then.
    assert late_after_s(0.025, misses=1) == pytest.approx(0.025)
    assert late_after_s(0.1, misses=5) == pytest.approx(0.15)
