"""A connection attempt to a silent worker's port: what tells a dead process (refused, unanswered) from
a paused one (the kernel still accepts) when its pulses stop."""

from __future__ import annotations

import asyncio
import contextlib
import time
from urllib.parse import urlsplit

from infaas.policy.failure_detection import Probe


async def probe_port(url: str, timeout_s: float) -> Probe | None:
    """Try a TCP connection to `url`'s host and port (None: `url` names none). A timeout counts as
    unanswered only if this loop was not itself stalled meanwhile; else it tries again."""
    parts = urlsplit(url)
    if not parts.hostname or not parts.port:
        return None
    for _ in range(2):
        started = time.monotonic()
        try:
            _, writer = await asyncio.wait_for(
                asyncio.open_connection(parts.hostname, parts.port), timeout=timeout_s
            )
        except TimeoutError:
            if time.monotonic() - started < 2 * timeout_s:
                return "unanswered"
            continue  # this process was paused past the timeout: the attempt says nothing
        except OSError:
            return "refused"
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
        return "accepted"
    return "unanswered"
