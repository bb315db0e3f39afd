"""The failure watch's end of the pulses (`infaas.data.pulses`): a UDP socket on the planner's port
number, where every datagram is verified (signed under the internal key, its sequence past the last one
heard from that incarnation) before the watch sees it; everything else is counted and dropped."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from infaas.data.pulses import Pulse, PulseSeal
from services.planner import metrics

log = logging.getLogger("infaas.planner")

LOG_EVERY = 1000
"""A refused datagram is logged the first time and then once per this many (a flood must not flood
the log as well); every one is counted in `infaas_pulses_rejected_total`."""


class PulseInbox(asyncio.DatagramProtocol):
    def __init__(self, seal: PulseSeal, on_pulse: Callable[[Pulse, float], None]) -> None:
        self.seal = seal
        self.on_pulse = on_pulse
        self.last: dict[str, tuple[str, int]] = {}  # worker -> (incarnation, sequence) last accepted
        self.rejected = 0
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def datagram_received(self, data: bytes, addr: tuple[Any, ...]) -> None:
        now = time.monotonic()
        try:
            pulse = self.seal.open(data)
        except ValueError as exc:  # UnicodeDecodeError included
            self._reject(addr, "unsigned", str(exc))
            return
        last = self.last.get(pulse.worker)
        if last is not None and last[0] == pulse.incarnation and pulse.seq <= last[1]:
            self._reject(addr, "replayed", f"{pulse.worker} sequence {pulse.seq} after {last[1]}")
            return
        self.last[pulse.worker] = (pulse.incarnation, pulse.seq)
        self.on_pulse(pulse, now)

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
