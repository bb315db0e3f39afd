"""Leader election for the planner's loops: a Redis key with a lease, so that of several planners exactly
one acts. The autoscalers share one lease (`LEADER_KEY`); the offline-jobs loop has its own
(`JOBS_LEADER_KEY`)."""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
import uuid
from collections.abc import Callable
from typing import Any

import redis.asyncio as aioredis

from infaas.data import store

LEADER_KEY = store.P + "planner:leader"
JOBS_LEADER_KEY = store.P + "planner:jobs-leader"
"""The offline-jobs loop's own lease: one planner leases chunks, whichever leads the autoscalers."""
# Renew only our own lease: compare-and-extend in one step.
_RENEW = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
"""


class LeaderLock:
    """Exactly one planner acts at a time: a Redis key with a lease, renewed by its holder as its loops
    tick. A planner that dies stops renewing and another takes over once the lease lapses.

    A holder that took or renewed the lease less than `fresh_s` ago (default: 0.9 s, at most a fifth of
    the lease) holds it without asking: the loops sharing a lease each tick once a second at their own
    phase, and one renewal a second keeps it as well as one per loop did, a round trip (~1 ms of the
    planner's CPU here) fewer per loop. Should Redis lose the key meanwhile (it came back empty), the
    holder acts on for up to `fresh_s`, as it did until its next tick before."""

    def __init__(
        self,
        redis: aioredis.Redis,
        *,
        lease_s: float = 5.0,
        owner: str | None = None,
        key: str = LEADER_KEY,
        fresh_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.redis = redis
        self.lease_ms = int(lease_s * 1000)
        self.owner = owner or uuid.uuid4().hex
        self.key = key
        self.fresh_s = min(0.9, lease_s / 5) if fresh_s is None else fresh_s
        self.clock = clock
        self.held = False  # as of this process's last call: which command to try first
        # Times this process took the lease (not renewed it): a loop that saw it change since it
        # last looked may have missed what happened while another planner, or none, held it.
        self.terms = 0
        self._held_at = -math.inf  # clock() when the last ask that found it held began
        # The loops sharing a lease start together and tick at the same interval, so they often ask
        # at once: the first one's round trip answers them all.
        self._asking: asyncio.Future[bool] | None = None

    async def hold(self) -> bool:
        """True when this process holds the lease after the call (taking or renewing it). The holder tries
        to renew first and the others to take it first: either way one round trip per tick, where
        every loop of the leader calls this every second; callers that ask while an answer is on its
        way share it."""
        if self.held and self.clock() - self._held_at < self.fresh_s:
            return True
        asking = self._asking
        if asking is None:
            asking = self._asking = asyncio.ensure_future(self._ask())
            asking.add_done_callback(self._asked)
        return await asyncio.shield(asking)

    def _asked(self, asking: asyncio.Future[bool]) -> None:
        if self._asking is asking:
            self._asking = None
        if not asking.cancelled():
            # Marked retrieved: its callers re-raise a failure through the shield, but if every one of
            # them was cancelled meanwhile, asyncio would log it as never retrieved.
            asking.exception()

    async def _ask(self) -> bool:
        started = self.clock()
        if self.held:
            renewed: Any = await self.redis.eval(_RENEW, 1, self.key, self.owner, self.lease_ms)
            if renewed:
                self._held_at = started
                return True
        taken = bool(await self.redis.set(self.key, self.owner, nx=True, px=self.lease_ms))
        if not taken:  # someone else's, or ours after all (an owner string shared on purpose)
            taken = bool(await self.redis.eval(_RENEW, 1, self.key, self.owner, self.lease_ms))
        self.held = taken
        if taken:
            self._held_at = started
            self.terms += 1
        return taken

    async def release(self) -> None:
        if self._asking is not None:  # an answer on its way would set `held` after this
            with contextlib.suppress(Exception):
                await asyncio.shield(self._asking)
        self.held = False
        if await self.redis.get(self.key) == self.owner.encode():
            await self.redis.delete(self.key)
