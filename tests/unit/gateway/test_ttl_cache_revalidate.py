"""The gateway's TTL cache with `revalidate` (the registry's version token): a reload that finds the
version its entry was loaded under renews the entry without asking the source."""

from __future__ import annotations

import asyncio

import pytest

from gateway.ttl_cache import TTLCache
from tests.unit.gateway.cache_fakes import Clock, Loader


class Version:
    """The source's version as the cache reads it; counts reads, or raises when told to."""

    def __init__(self) -> None:
        self.value: str | None = "v1"
        self.reads = 0
        self.fail = False

    async def __call__(self) -> str | None:
        self.reads += 1
        if self.fail:
            raise ConnectionError("redis away")
        return self.value


def _cache(clock: Clock, version: Version) -> TTLCache[str]:
    return TTLCache(10.0, refresh_after_s=5.0, clock=clock, revalidate=version)


async def _refresh(cache: TTLCache[str], clock: Clock, loader: Loader, after_s: float = 6.0) -> str:
    """Move past the refresh, let the background reload run, and read the entry."""
    clock.now += after_s
    await cache.get("k", loader("k"))
    for _ in range(3):
        await asyncio.sleep(0)
    return await cache.get("k", loader("k"))


async def test_an_unchanged_version_renews_the_entry_without_a_load(clock: Clock, loader: Loader) -> None:
    version = Version()
    cache = _cache(clock, version)
    assert await cache.get("k", loader("k")) == "k#1"
    for _ in range(4):  # t = 6, 12, 18, 24: every refresh confirms it, none loads it
        assert await _refresh(cache, clock, loader) == "k#1"
    assert loader.calls == ["k"] and version.reads == 5
    clock.now += 9.0  # t = 33: renewed at t = 24, still fresh
    assert await cache.get("k", loader("k")) == "k#1"
    assert loader.calls == ["k"]


async def test_a_new_version_loads_the_entry_and_is_remembered(clock: Clock, loader: Loader) -> None:
    version = Version()
    cache = _cache(clock, version)
    await cache.get("k", loader("k"))
    version.value = "v2"  # the registry committed a change
    assert await _refresh(cache, clock, loader) == "k#2"
    assert await _refresh(cache, clock, loader) == "k#2"  # v2 it was loaded under: renewed
    assert loader.calls == ["k", "k"]


@pytest.mark.parametrize("how", ["none written", "redis away"])
async def test_without_a_version_every_refresh_loads(clock: Clock, loader: Loader, how: str) -> None:
    version = Version()
    cache = _cache(clock, version)
    await cache.get("k", loader("k"))
    if how == "none written":
        version.value = None
    else:
        version.fail = True
    assert await _refresh(cache, clock, loader) == "k#2"
    assert await _refresh(cache, clock, loader) == "k#3"
    version.fail, version.value = False, "v1"  # back, with the token it had: the entry was read without one
    assert await _refresh(cache, clock, loader) == "k#4"
    assert await _refresh(cache, clock, loader) == "k#4"


async def test_an_expired_entry_under_the_same_version_answers_without_a_load(
    clock: Clock, loader: Loader
) -> None:
    version = Version()
    cache: TTLCache[str] = TTLCache(10.0, clock=clock, revalidate=version)  # no background refresh
    await cache.get("k", loader("k"))
    clock.now += 30.0
    assert await cache.get("k", loader("k")) == "k#1"
    assert loader.calls == ["k"]
    version.value = "v2"
    clock.now += 30.0
    assert await cache.get("k", loader("k")) == "k#2"


async def test_a_dropped_entry_is_loaded_whatever_the_version(clock: Clock, loader: Loader) -> None:
    version = Version()
    cache = _cache(clock, version)
    await cache.get("k", loader("k"))
    cache.drop("k")  # the gateway knows its source changed
    assert await cache.get("k", loader("k")) == "k#2"


async def test_an_entry_renewed_by_its_version_is_still_read_every_read_every_s(
    clock: Clock, loader: Loader
) -> None:
    version = Version()
    cache: TTLCache[str] = TTLCache(
        10.0, refresh_after_s=5.0, clock=clock, revalidate=version, read_every_s=15.0
    )
    await cache.get("k", loader("k"))  # read at t = 0
    assert await _refresh(cache, clock, loader) == "k#1"  # t = 6: renewed
    assert await _refresh(cache, clock, loader) == "k#1"  # t = 12: renewed
    assert await _refresh(cache, clock, loader) == "k#2"  # t = 18: read again, though nothing changed
    assert await _refresh(cache, clock, loader) == "k#2"  # t = 24: renewed, from the read at t = 18
    assert loader.calls == ["k", "k"]
