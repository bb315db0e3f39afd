"""Every `TTLCache` a gateway test makes is closed when the test ends, on the test's own event loop: a
keep-warm timer left scheduled could otherwise fire while the loop closes and start a load on a task
that is never awaited; it is destroyed pending later, and the warning fails whichever test the garbage
collector happens to run in (seen in CI: a metrics test failed on a TTL cache's task)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from gateway.ttl_cache import TTLCache
from tests.unit.gateway.cache_fakes import Clock, Loader


@pytest.fixture(autouse=True)
async def _close_ttl_caches(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[None]:
    made: list[TTLCache[Any]] = []
    init = TTLCache.__init__

    def tracked(self: TTLCache[Any], *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(TTLCache, "__init__", tracked)
    yield
    for cache in made:
        await cache.aclose()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def loader() -> Loader:
    return Loader()
