"""Which workers have failed, from the pulses a detector heard: pure rules over times it passes in.

A worker is silent when its last pulse was heard more than `timeout_s` before the send time of the
detector's own latest pulse heard back on the same channel (its echo). The echo is what keeps a Redis
outage (or a stalled subscription) from being taken as every worker failing: while the channel carries
nothing, no echo comes back either and nobody is declared; once it carries the detector's echo sent
after a worker's deadline, that worker's silence was real. While every worker's pulses keep coming,
they prove the channel themselves, so the detector echoes only once one is `late`: an echo is a
publish, its reply and its delivery, three wake-ups of the planner and of Redis per interval on the
cores that serve queries.

Silence alone does not tell a dead process from a paused one: on a loaded machine a live executor's
pulse thread is not scheduled for tens of milliseconds now and then, longer than two intervals. So a
silent worker is declared failed only with a second signal, a connection attempt to its port (`Probe`):
refused (nothing listens there: the process is gone) or unanswered (its host or network is gone)
confirms it; accepted (the kernel still accepts for the process: it lives, paused or hung) makes it a
suspect, declared only once its silence reaches `hung_s`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

Probe = Literal["refused", "unanswered", "accepted"]

LATE_INTERVALS = 1.5
"""A worker whose latest pulse is older than this many intervals (at most the misses that make it
silent) is late: the detector echoes each interval until it pulses again or is declared. Above 1, so
that a pulse a little behind its interval is not late; never above the misses, so the echo that can
find a worker silent is sent at the same tick as when the detector echoed every interval."""


def late_after_s(interval_s: float, misses: int) -> float:
    """How long after its latest pulse a worker is late."""
    return min(LATE_INTERVALS, misses) * interval_s


def late(last_heard: Mapping[str, float], *, now: float, after_s: float) -> bool:
    """Whether some worker in `last_heard` (worker -> when its latest pulse arrived) is late at `now`."""
    return any(now - heard > after_s for heard in last_heard.values())


def silent(
    last_heard: Mapping[str, float], *, echo_sent_at: float | None, timeout_s: float
) -> tuple[str, ...]:
    """Workers in `last_heard` (worker -> when its latest pulse arrived) silent for over `timeout_s` by
    the echo sent at `echo_sent_at` and already heard back (None: no echo heard, nobody is declared)."""
    if echo_sent_at is None:
        return ()
    return tuple(w for w, heard in last_heard.items() if echo_sent_at - heard > timeout_s)


def verdict(silence_s: float, probe: Probe | None, *, hung_s: float) -> str | None:
    """Why a silent worker (past the pulse timeout) is failed, given what a connection to its port found
    (`probe`; None: it has no address to try, failed on silence alone), or None: not failed (yet).
    `silence_s`: how long it has stayed silent since a probe first found its port accepting (0 at the
    first), so that only silence the detector watched makes a worker hung."""
    if probe is None:
        return "no address to confirm it by"
    if probe == "refused":
        return "its port refuses connections"
    if probe == "unanswered":
        return "its port does not answer"
    if silence_s >= hung_s:
        return f"hung: its port still accepts connections, but no pulse for {hung_s * 1000:.0f} ms or more"
    return None


def unseen_for_ttl(last_seen: float, reachable_since: float, now: float, ttl_s: float) -> bool:
    """Whether a worker missing from a read of the store has been unseen for `ttl_s` while Redis answered
    (`reachable_since`: when reads last came back after failing). One seen recently vanished with Redis's
    state (restarted empty) and heartbeats again within an interval: not a failure. The time while reads
    failed does not count against it. Schedulers keep such a worker (`services/scheduler/liveness.py`);
    the planner's snapshot fallback does not declare it."""
    return now - max(last_seen, reachable_since) >= ttl_s


def missing_recently_seen(
    seen_at: Mapping[str, float],
    beats: Mapping[str, float],
    *,
    now: float,
    reachable_since: float,
    ttl_s: float,
) -> tuple[tuple[str, ...], dict[str, float]]:
    """Workers whose heartbeat was seen within `ttl_s` (while Redis answered) that the store no longer
    lists at all: Redis lost their keys (restarted empty, or flushed) and they will heartbeat again
    within an interval. A plan made on such a read counts their instances as gone.
    `beats`: the store's heartbeat index, worker -> last heartbeat (0: left on purpose or declared
    failed); `seen_at`: what the previous call returned. A worker that stopped heartbeating stays listed
    with its old time, so it is never missing: it goes once its heartbeat is a TTL old, as it should.
    Returns the missing workers, sorted, and the `seen_at` to pass next time."""
    kept = {w: at for w, at in beats.items() if at > 0}
    missing = []
    for worker, at in seen_at.items():
        if worker not in beats and not unseen_for_ttl(at, reachable_since, now, ttl_s):
            kept[worker] = at
            missing.append(worker)
    return tuple(sorted(missing)), kept
