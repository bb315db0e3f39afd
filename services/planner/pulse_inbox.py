"""The failure watch's end of the pulses (`infaas.data.pulses`): a UDP socket on the planner's port
number, where every datagram is verified (signed under the internal key, its sequence past the last one
heard from that incarnation) before the watch sees it; everything else is counted and dropped.

Checking a signature in a wake-up of its own costs ~50 µs on a cold cache here, a third of what a pulse
costs the planner. So once a pulse of an incarnation is verified, the inbox signs that incarnation's
next `EXPECTED_AHEAD` alive pulses itself, at once, and takes a datagram byte for byte equal to one of
them without checking it again: it is exactly what checking would have accepted."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from infaas.data.pulses import Pulse, PulseSeal
from services.planner import metrics

log = logging.getLogger("infaas.planner")

EXPECTED_AHEAD = 40
"""Alive pulses of each incarnation heard that the inbox signs ahead (a second's worth at the default
interval); a pulse past them, or after a gap, is checked and starts the next batch."""
LOG_EVERY = 1000
"""A refused datagram is logged the first time and then once per this many (a flood must not flood
the log as well); every one is counted in `infaas_pulses_rejected_total`."""


class PulseInbox(asyncio.DatagramProtocol):
    def __init__(self, seal: PulseSeal, on_pulse: Callable[[Pulse, float], None]) -> None:
        self.seal = seal
        self.on_pulse = on_pulse
        self.last: dict[str, tuple[str, int]] = {}  # worker -> (incarnation, sequence) last accepted
        self.expected: dict[bytes, Pulse] = {}  # datagram -> the pulse it is, signed here ahead
        self._expected_of: dict[str, list[bytes]] = {}  # worker -> its datagrams in `expected`
        self.checked = 0  # datagrams whose signature was checked (not found in `expected`)
        self.rejected = 0
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def datagram_received(self, data: bytes, addr: tuple[Any, ...]) -> None:
        now = time.monotonic()
        pulse = self.expected.pop(data, None)
        was_expected = pulse is not None
        if pulse is None:
            self.checked += 1
            try:
                pulse = self.seal.open(data)
            except ValueError as exc:  # UnicodeDecodeError included
                self._reject(addr, "unsigned", str(exc))
                return
        last = self.last.get(pulse.worker)
        if last is not None and last[0] == pulse.incarnation and pulse.seq <= last[1]:
            self._reject(addr, "replayed", f"{pulse.worker} sequence {pulse.seq} after {last[1]}")
            return
        same = last is not None and last[0] == pulse.incarnation
        self.last[pulse.worker] = (pulse.incarnation, pulse.seq)
        ahead = self._expected_of.get(pulse.worker)
        # An incarnation is signed ahead from its second pulse on: a watch's echoes are one pulse each.
        if pulse.state != "alive" or not same:
            self.forget(pulse.worker)
        elif not was_expected or not ahead or ahead[-1] not in self.expected:  # checked, or a batch's last
            self._expect(pulse)
        self.on_pulse(pulse, now)

    def forget(self, worker: str) -> None:
        """Drop what was signed ahead for `worker` (it left, failed, or came back as another incarnation)."""
        for datagram in self._expected_of.pop(worker, ()):
            self.expected.pop(datagram, None)

    def _expect(self, pulse: Pulse) -> None:
        """Sign the `EXPECTED_AHEAD` alive pulses after `pulse`, in place of those signed before."""
        self.forget(pulse.worker)
        after = [replace(pulse, seq=pulse.seq + n) for n in range(1, EXPECTED_AHEAD + 1)]
        datagrams = self._expected_of[pulse.worker] = [self.seal.seal(p) for p in after]
        self.expected.update(zip(datagrams, after, strict=True))

    def error_received(self, exc: Exception) -> None:
        log.debug("pulse socket error: %s", exc)

    def _reject(self, addr: tuple[Any, ...], why: str, detail: str) -> None:
        self.rejected += 1
        metrics.PULSES_REJECTED.labels(why).inc()
        if self.rejected % LOG_EVERY == 1:
            log.warning(
                "refused a pulse datagram from %s (%s: %s); %d so far", addr, why, detail, self.rejected
            )


async def open_inbox(
    host: str, port: int, seal: PulseSeal, on_pulse: Callable[[Pulse, float], None]
) -> tuple[asyncio.DatagramTransport, PulseInbox]:
    """Bind the inbox on `port` (the planner's own number, over UDP), or on any free port where that one
    is taken: senders learn the address from what the watch advertises, not from a setting."""
    loop = asyncio.get_running_loop()

    def inbox() -> PulseInbox:
        return PulseInbox(seal, on_pulse)

    try:
        return await loop.create_datagram_endpoint(inbox, local_addr=(host, port))
    except OSError as exc:
        if port == 0:
            raise
        log.info("UDP port %d on %s is taken (%s): pulses come to a free one", port, host, exc)
        return await loop.create_datagram_endpoint(inbox, local_addr=(host, 0))
