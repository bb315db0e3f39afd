"""Pulses: the fast liveness signal of executors (FailLite's heartbeats every 20–50 ms).

Each executor publishes a few bytes on `PULSES_CHANNEL` every `pulse_interval_s` from a thread of its
own, so a busy event loop (a long batch, a garbage collection) does not silence it while the process
lives; a detector (`services/planner/failures.py`) declares a worker failed when its pulses stop for
`pulse_misses` intervals. The slower heartbeat (`store.heartbeat`) still carries load and instance
states: a pulse carries only who is alive, which incarnation, and whether it is leaving on purpose.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from dataclasses import dataclass
from typing import Any, Literal, cast

import redis

log = logging.getLogger("infaas.pulses")

PULSES_CHANNEL = "infaas:pulses"

PulseState = Literal["alive", "leaving"]


@dataclass(frozen=True)
class Pulse:
    worker: str
    incarnation: str
    state: PulseState = "alive"

    def encode(self) -> bytes:
        return f"{self.worker}|{self.incarnation}|{self.state}".encode()

    @classmethod
    def decode(cls, raw: bytes) -> Pulse:
        """Raises ValueError on anything but three `|`-separated fields with a known state."""
        worker, incarnation, state = raw.decode().split("|")
        if state not in ("alive", "leaving") or not worker:
            raise ValueError(f"not a pulse: {raw[:80]!r}")
        return cls(worker, incarnation, state)  # type: ignore[arg-type]


class PulseSender:
    """Publishes a worker's pulse every `interval_s` on a thread with its own Redis connection.

    A pulse is fire-and-forget: its connection turns Redis's replies off (`CLIENT REPLY OFF`, sent again
    on every reconnect), so each interval costs one wake-up and one write, not a write, a wait for the
    reply and a second wake-up to read it. The executor's share of an idle suite's CPU was mostly pulses
    (docs/benchmarks.md). A dead Redis still shows: a write to a closed connection fails, and so does the
    poll that follows each write."""

    def __init__(self, redis_url: str, pulse: Pulse, *, interval_s: float) -> None:
        self.redis = redis.Redis.from_url(redis_url, socket_timeout=1.0, socket_connect_timeout=1.0)
        # Its own connection, never back in the pool: nothing else may wait on it for a reply. (Any: redis-py
        # leaves its connection methods untyped.)
        self.conn: Any = cast(Any, self.redis.connection_pool.make_connection())
        self.conn.register_connect_callback(self._replies_off)
        self.message = self.conn.pack_command("PUBLISH", PULSES_CHANNEL, pulse.encode())
        self.leaving = self.conn.pack_command(
            "PUBLISH", PULSES_CHANNEL, Pulse(pulse.worker, pulse.incarnation, "leaving").encode()
        )
        self.interval_s = interval_s
        self.sent = 0
        self.replies = 0  # answers Redis sent back all the same (none where it honours CLIENT REPLY OFF)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pulse", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _replies_off(self, conn: Any) -> None:
        conn.send_command("CLIENT", "REPLY", "OFF", check_health=False)

    def _publish(self, packed: list[bytes]) -> None:
        self.conn.send_packed_command(packed, check_health=False)
        # Nothing is due back. A server that kept replying (a proxy without CLIENT REPLY) gets its
        # replies read here, so that they do not pile up; a closed connection raises here.
        while self.conn.can_read(0):
            self.replies += 1
            with contextlib.suppress(redis.ResponseError):
                self.conn.read_response()

    def _run(self) -> None:
        failing = False
        while not self._stop.is_set():
            try:
                self._publish(self.message)
                self.sent += 1
                failing = False
            except redis.RedisError as exc:  # Redis away: detectors hear nobody then, and wait for it
                if not failing:
                    log.warning("pulse failed: %s", exc)
                failing = True
            self._stop.wait(self.interval_s)

    def stop(self, *, leaving: bool = True) -> None:
        """Stop pulsing; with `leaving`, tell detectors this worker goes on purpose (no failure)."""
        self._stop.set()
        self._thread.join()
        if leaving:
            try:
                self._publish(self.leaving)
            except redis.RedisError as exc:
                log.warning("the leaving pulse failed: %s", exc)
        self.conn.disconnect()
        self.redis.close()
