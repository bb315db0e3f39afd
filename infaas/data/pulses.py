"""Pulses: the fast liveness signal of executors (FailLite's heartbeats every 20–50 ms).

Each executor sends a signed datagram to every failure watch (`services/planner/failure_watch.py`, one per
planner) every `pulse_interval_s` from a thread of its own, so a busy event loop (a long batch, a garbage
collection) does not silence it while the process lives; a watch declares a worker failed when its
pulses stop for `pulse_misses` intervals. The slower heartbeat (`store.heartbeat`) still carries load and
instance states: a pulse carries only who is alive, which incarnation, and whether it is leaving.

Why UDP straight to the watch and not a Redis channel: at 40 pulses a second per executor, a publish
wakes Redis and then the planner, whose Redis client spends ~0.2 ms parsing each delivery: most of an
idle suite's CPU on the cores that serve queries (docs/benchmarks.md). A datagram wakes the planner
once, and a watch reads it in a few microseconds.

- **Where to send**: each watch advertises its address in the sorted set `PULSE_LISTENERS` (member
  `host:port`, score: when the entry expires), renewed every `LISTENER_RENEW_S`. A sender reads the set
  every `LISTENER_RENEW_S` and drops an address only once `LISTENER_TTL_S` worth of successful reads in a
  row missed it: a Redis that comes back empty, a read that fails, or a pause of the whole host (the
  watches' entries expire meanwhile; they advertise again within a second of waking) silences nobody.
- **Who may say so**: anyone on the host can send a datagram. A pulse carries an HMAC-SHA256 of its fields
  under the suite's internal key and a sequence number that grows with every pulse of an incarnation, so
  a forged pulse (a dead worker kept alive, a failure hidden behind `leaving`) is refused, and so is a
  replayed one. Without an internal key nothing is sent or accepted, as with every internal request.
  A sender signs its next `SEALED_AHEAD` alive pulses at once, so that a pulse's own wake-up is a send
  and nothing else; its `leaving` pulse is numbered after the last one it sent.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import logging
import socket
import threading
import time
from dataclasses import dataclass, replace
from typing import Literal

import redis

log = logging.getLogger("infaas.pulses")

PULSE_LISTENERS = "infaas:pulse-listeners"
LISTENER_RENEW_S = 1.0
LISTENER_TTL_S = 5.0
MAX_PULSE_BYTES = 512
SEALED_AHEAD = 40
"""Alive pulses a sender signs at once, a second's worth at the default interval: one signing in a
wake-up of its own costs ~60 µs on a cold cache here, a batch of them ~3 µs each (docs/benchmarks.md)."""
_MAC_CHARS = 32  # 128 bits of the HMAC, hex

PulseState = Literal["alive", "leaving"]


@dataclass(frozen=True)
class Pulse:
    worker: str
    incarnation: str
    state: PulseState = "alive"
    seq: int = 0


class PulseSeal:
    """Signs pulses into datagrams and opens them, under the suite's internal key."""

    def __init__(self, key: str) -> None:
        self._mac = hmac.new(key.encode(), digestmod=hashlib.sha256) if key else None

    @property
    def keyed(self) -> bool:
        return self._mac is not None

    def _sign(self, body: bytes) -> bytes:
        if self._mac is None:
            raise ValueError("no internal key: pulses can be neither signed nor verified")
        mac = self._mac.copy()
        mac.update(body)
        return mac.hexdigest()[:_MAC_CHARS].encode()

    def seal(self, pulse: Pulse) -> bytes:
        if "|" in pulse.worker or "|" in pulse.incarnation:
            raise ValueError(f"a pulse's worker and incarnation hold no '|': {pulse!r}")
        body = f"{pulse.worker}|{pulse.incarnation}|{pulse.state}|{pulse.seq}".encode()
        return body + b"|" + self._sign(body)

    def open(self, raw: bytes) -> Pulse:
        """The pulse in a datagram; ValueError unless it is well formed and signed under this key."""
        if len(raw) > MAX_PULSE_BYTES:
            raise ValueError(f"a datagram of {len(raw)} bytes is no pulse")
        body, _, mac = raw.rpartition(b"|")
        if not hmac.compare_digest(mac, self._sign(body)):
            raise ValueError("bad signature")
        worker, incarnation, state, seq = body.decode().split("|")
        if state not in ("alive", "leaving") or not worker:
            raise ValueError(f"not a pulse: {raw[:80]!r}")
        return Pulse(worker, incarnation, state, int(seq))  # type: ignore[arg-type]


def listener_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def parse_address(member: str) -> tuple[str, int]:
    host, _, port = member.rpartition(":")
    return host.strip("[]"), int(port)


class PulseSender:
    """Sends a worker's pulse every `interval_s` to every advertised watch, from a thread of its own; a
    second thread reads the watches' addresses every `renew_s` (so that a slow Redis never delays a
    pulse). A datagram is one wake-up and one write: no connection, nothing comes back."""

    def __init__(
        self,
        redis_url: str,
        pulse: Pulse,
        *,
        interval_s: float,
        key: str,
        renew_s: float = LISTENER_RENEW_S,
        ttl_s: float = LISTENER_TTL_S,
    ) -> None:
        self.redis = redis.Redis.from_url(redis_url, socket_timeout=1.0, socket_connect_timeout=1.0)
        self.pulse = pulse
        self.seal = PulseSeal(key)
        self.interval_s = interval_s
        self.renew_s = renew_s
        self.sent = 0  # pulses sent (one per interval, to every watch)
        self.failed = 0  # datagrams the kernel refused (a watch's host unreachable, a full buffer)
        self.targets: tuple[tuple[socket.socket, tuple[object, ...]], ...] = ()
        self._missed: dict[str, int] = {}  # address -> successful reads in a row that did not list it
        self._drop_after = max(1, round(ttl_s / renew_s))
        self._resolved: dict[str, tuple[socket.AddressFamily, tuple[object, ...]]] = {}
        self._sockets: dict[socket.AddressFamily, socket.socket] = {}
        self._seq = 0  # the sequence number of the last pulse sent
        self._ahead: list[bytes] = []  # alive pulses signed ahead, the next one last
        self._stop = threading.Event()
        # The pulse thread sleeps on a plain lock held until `stop`: a timed `Event.wait` builds a lock
        # and a Condition for every wait, ~30 µs more per wake-up here, 40 times a second.
        self._halt = threading.Lock()
        self._halt.acquire()
        self._threads = [
            threading.Thread(target=self._run, name="pulse", daemon=True),
            threading.Thread(target=self._watch_listeners, name="pulse-listeners", daemon=True),
        ]
        if not self.seal.keyed:
            log.warning("no internal key: this worker sends no pulses (a watch could not verify them)")

    def start(self) -> None:
        if self.seal.keyed:
            for thread in self._threads:
                thread.start()

    def refresh(self) -> None:
        """Read the watches' addresses once; one that `ttl_s` worth of reads in a row missed is dropped."""
        members: list[bytes] = self.redis.zrangebyscore(PULSE_LISTENERS, time.time(), "+inf")  # type: ignore[assignment]
        listed = {m.decode() for m in members}
        kept = {a: n + 1 for a, n in self._missed.items() if a not in listed and n + 1 < self._drop_after}
        self._missed = {**kept, **dict.fromkeys(listed, 0)}
        targets = []
        for address in self._missed:
            try:
                family, sockaddr = self._resolve(address)
            except (OSError, ValueError) as exc:
                log.warning("pulse listener %s cannot be resolved: %s", address, exc)
                continue
            sock = self._sockets.get(family)
            if sock is None:
                sock = self._sockets[family] = socket.socket(family, socket.SOCK_DGRAM)
                sock.setblocking(False)
            targets.append((sock, sockaddr))
        self.targets = tuple(targets)  # one assignment: the pulse thread reads whole tuples

    def _resolve(self, address: str) -> tuple[socket.AddressFamily, tuple[object, ...]]:
        if address not in self._resolved:
            host, port = parse_address(address)
            family, _, _, _, sockaddr = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)[0]
            self._resolved[address] = (family, tuple(sockaddr))
        return self._resolved[address]

    def _watch_listeners(self) -> None:
        failing = False
        while not self._stop.is_set():
            try:
                self.refresh()
                failing = False
            except (redis.RedisError, OSError) as exc:  # Redis away: keep sending where we did
                if not failing:
                    log.warning("reading the pulse listeners failed: %s", exc)
                failing = True
            self._stop.wait(self.renew_s)

    def _send(self, state: PulseState) -> None:
        if state == "alive":
            if not self._ahead:
                seqs = range(self._seq + SEALED_AHEAD, self._seq, -1)
                self._ahead = [self.seal.seal(replace(self.pulse, state=state, seq=n)) for n in seqs]
            datagram = self._ahead.pop()
        else:  # past every alive pulse sent; those signed ahead and not sent are never sent
            self._ahead = []
            datagram = self.seal.seal(replace(self.pulse, state=state, seq=self._seq + 1))
        self._seq += 1
        for sock, address in self.targets:
            try:
                sock.sendto(datagram, address)
            except OSError:
                self.failed += 1

    def _run(self) -> None:
        while True:
            self._send("alive")
            self.sent += 1
            if self._halt.acquire(timeout=self.interval_s):
                return

    def stop(self, *, leaving: bool = True) -> None:
        """Stop pulsing; with `leaving`, tell the watches this worker goes on purpose (no failure)."""
        if not self._stop.is_set():
            self._stop.set()
            self._halt.release()
        for thread in self._threads:
            if thread.is_alive():
                thread.join()
        if leaving and self.seal.keyed:
            for _ in range(2):  # a datagram may be lost; the second one costs nothing
                self._send("leaving")
        for sock in self._sockets.values():
            with contextlib.suppress(OSError):
                sock.close()
        self.redis.close()
