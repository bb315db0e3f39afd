"""Which workers have failed, from the pulses a detector heard: a pure rule over times it passes in.

A worker is silent when its last pulse was heard more than `timeout_s` before the send time of the
detector's own latest pulse heard back on the same channel (its echo). The echo is what keeps a Redis
outage (or a stalled subscription) from being taken as every worker failing: while the channel carries
nothing, no echo comes back either and nobody is declared; once it carries the detector's echo sent
after a worker's deadline, that worker's silence was real.
"""

from __future__ import annotations

from collections.abc import Mapping


def silent(
    last_heard: Mapping[str, float], *, echo_sent_at: float | None, timeout_s: float
) -> tuple[str, ...]:
    """Workers in `last_heard` (worker -> when its latest pulse arrived) silent for over `timeout_s` by
    the echo sent at `echo_sent_at` and already heard back (None: no echo heard, nobody is declared)."""
    if echo_sent_at is None:
        return ()
    return tuple(w for w, heard in last_heard.items() if echo_sent_at - heard > timeout_s)
