"""A small TTL cache for what the gateway looks up per request (keys, apps, models).

Looking these up in the registry on every query would put a database read on the hot path; a few
seconds of staleness (documented in `docs/architecture.md`) is the price.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

V = TypeVar("V")


class TTLCache(Generic[V]):
    def __init__(
        self, ttl_s: float, *, max_entries: int = 10_000, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self.clock = clock
        self._data: OrderedDict[str, tuple[float, V]] = OrderedDict()

    async def get(self, key: str, load: Callable[[], Awaitable[V]]) -> V:
        now = self.clock()
        hit = self._data.get(key)
        if hit is not None and hit[0] > now:
            return hit[1]
        value = await load()
        self._data[key] = (now + self.ttl_s, value)
        self._data.move_to_end(key)
        while len(self._data) > self.max_entries:
            self._data.popitem(last=False)
        return value

    def drop(self, key: str) -> None:
        self._data.pop(key, None)
