"""Loops that repeat wake on shared beats (`infaas.core.beats`): the next multiple of their interval on
the host's monotonic clock, just past it."""

from __future__ import annotations

import pytest

from infaas.core.beats import BEAT_LAG_S, until_beat


@pytest.mark.parametrize("now", [0.0, 0.3, 7.25, 1234.999, 10.0])
def test_every_loop_wakes_just_past_the_next_multiple_of_its_interval(now: float) -> None:
    for interval in (0.025, 0.25, 0.5, 1.0, 2.0):
        woke = now + until_beat(interval, now)
        beats = (woke - BEAT_LAG_S) / interval
        assert beats == pytest.approx(round(beats), abs=1e-6)
        assert now < woke <= now + interval + BEAT_LAG_S


def test_loops_in_different_processes_with_dividing_intervals_wake_together() -> None:
    # A 1 s loop that last ran at 3.41 and a 0.5 s one that ran at 3.87 (their own moments, as a
    # sleep of their interval after each step would keep them) both wake at 4 s and a lag.
    assert 3.41 + until_beat(1.0, 3.41) == pytest.approx(4.0 + BEAT_LAG_S)
    assert 3.87 + until_beat(0.5, 3.87) == pytest.approx(4.0 + BEAT_LAG_S)


def test_a_timer_that_fires_a_little_early_sleeps_to_the_next_beat_not_for_a_fraction() -> None:
    # Set for 5.001, fired at 5.0004 (uvloop's millisecond clock): past the beat at 5 all the same.
    assert until_beat(1.0, 5.0004) == pytest.approx(1.0 + BEAT_LAG_S - 0.0004)


def test_a_step_that_ran_past_a_beat_waits_for_the_next_one() -> None:
    # Woke at 2.001, the step took 1.3 s: the beat at 3 is missed, the next wake-up is at 4.001.
    assert 3.301 + until_beat(1.0, 3.301) == pytest.approx(4.0 + BEAT_LAG_S)


def test_a_non_positive_interval_does_not_wait() -> None:
    assert until_beat(0.0, 12.0) == 0.0
    assert until_beat(-1.0, 12.0) == 0.0
