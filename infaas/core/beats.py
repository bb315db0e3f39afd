"""Periodic work on shared beats.

Every loop of the suite that repeats (the planner's loops, heartbeats, snapshot polls, sweeps, pulses)
waits until the next multiple of its interval on the host's monotonic clock, rather than for its
interval after it last ran. `CLOCK_MONOTONIC` is one clock for every process on a host, so the loops of
all processes whose intervals divide one another wake in the same millisecond: their Redis round trips
go out in the same turn of each event loop, Redis answers them in one wake-up, and the core that
serves queries is interrupted by a burst once a beat instead of by each loop at its own moment. Each
wake-up costs far more than the work it does on these machines (a Python thread that wakes to send one
datagram spends ~0.3 ms of CPU), and each one lands on whatever query is running (docs/benchmarks.md,
"How much of it is the background"). The kernel does the same for its own periodic timers
(`round_jiffies`).

Hosts do not share a monotonic clock, so replicas on different machines do not herd onto one beat.
"""

from __future__ import annotations

import time

BEAT_LAG_S = 0.001
"""How far past the beat a loop is woken: an event loop's timer may fire up to a millisecond early
(uvloop keeps a millisecond clock), and one that fired just before the beat would find the beat still
ahead and sleep again for a fraction of a millisecond: a second wake-up for nothing."""


def until_beat(interval_s: float, now: float | None = None) -> float:
    """Seconds from `now` (default: `time.monotonic()`) to just past the next multiple of
    `interval_s`: what a loop that repeats every `interval_s` sleeps. Never more than
    `interval_s + BEAT_LAG_S`, never less than `BEAT_LAG_S`: a loop whose step ran past a beat waits
    for the next one, and a timer that fired within `BEAT_LAG_S` early, still past the beat it was
    set for, sleeps to the one after. 0 for a non-positive interval."""
    if interval_s <= 0:
        return 0.0
    t = time.monotonic() if now is None else now
    return interval_s - t % interval_s + BEAT_LAG_S
