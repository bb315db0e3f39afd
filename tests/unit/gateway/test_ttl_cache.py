"""The gateway's TTL cache, driven by a fake clock (and its keep-warm timers by the loop's virtual time)."""

from __future__ import annotations

import asyncio

import pytest

from gateway.ttl_cache import TTLCache
from tests.unit.gateway.cache_fakes import Clock, Loader
from tests.unit.virtual_time import VirtualTime


async def test_hit_within_ttl_does_not_call_the_loader(clock: Clock, loader: Loader) -> None:
    cache: TTLCache[str] = TTLCache(10.0, clock=clock)
    assert await cache.get("k", loader("k")) == "k#1"
    clock.now += 9.99
    assert await cache.get("k", loader("k")) == "k#1"
    assert loader.calls == ["k"]


async def test_expiry_reloads(clock: Clock, loader: Loader) -> None:
    cache: TTLCache[str] = TTLCache(10.0, clock=clock)
    await cache.get("k", loader("k"))
    clock.now += 10.0  # an entry lives strictly less than ttl_s
    assert await cache.get("k", loader("k")) == "k#2"
    clock.now += 5.0  # the reloaded value gets a fresh ttl
    assert await cache.get("k", loader("k")) == "k#2"
    assert loader.calls == ["k", "k"]


async def test_keys_are_independent(clock: Clock, loader: Loader) -> None:
    cache: TTLCache[str] = TTLCache(10.0, clock=clock)
    assert await cache.get("a", loader("a")) == "a#1"
    assert await cache.get("b", loader("b")) == "b#2"
    assert await cache.get("a", loader("a")) == "a#1"
    assert loader.calls == ["a", "b"]


async def test_max_entries_evicts_the_least_recently_inserted(clock: Clock, loader: Loader) -> None:
    cache: TTLCache[str] = TTLCache(100.0, max_entries=2, clock=clock)
    await cache.get("a", loader("a"))
    await cache.get("b", loader("b"))
    await cache.get("a", loader("a"))  # a hit does not refresh the insertion order
    await cache.get("c", loader("c"))  # evicts a
    assert loader.calls == ["a", "b", "c"]
    # b and c are still cached (checked before a, whose reload would evict again).
    assert await cache.get("b", loader("b")) == "b#2"
    assert await cache.get("c", loader("c")) == "c#3"
    assert loader.calls == ["a", "b", "c"]
    assert await cache.get("a", loader("a")) == "a#4"
    assert loader.calls == ["a", "b", "c", "a"]


async def test_reloading_an_expired_key_counts_as_a_new_insertion(clock: Clock, loader: Loader) -> None:
    cache: TTLCache[str] = TTLCache(10.0, max_entries=2, clock=clock)
    await cache.get("a", loader("a"))  # t = 0
    clock.now += 5.0
    await cache.get("b", loader("b"))  # t = 5
    clock.now += 6.0
    await cache.get("a", loader("a"))  # t = 11: a expired, reloaded, now the newest
    await cache.get("c", loader("c"))  # evicts b, the least recently inserted
    assert loader.calls == ["a", "b", "a", "c"]
    assert await cache.get("a", loader("a")) == "a#3"
    assert loader.calls == ["a", "b", "a", "c"]
    assert await cache.get("b", loader("b")) == "b#5"


async def test_drop_forces_a_reload(clock: Clock, loader: Loader) -> None:
    cache: TTLCache[str] = TTLCache(10.0, clock=clock)
    await cache.get("k", loader("k"))
    cache.drop("k")
    assert await cache.get("k", loader("k")) == "k#2"
    cache.drop("never-seen")  # dropping an absent key is fine


async def test_failing_loader_does_not_poison_the_cache(clock: Clock, loader: Loader) -> None:
    cache: TTLCache[str] = TTLCache(10.0, clock=clock)
    loader.fail = True
    with pytest.raises(RuntimeError, match="registry down"):
        await cache.get("k", loader("k"))
    loader.fail = False
    assert await cache.get("k", loader("k")) == "k#2"  # retried, not a cached failure
    assert await cache.get("k", loader("k")) == "k#2"
    assert loader.calls == ["k", "k"]


async def test_failing_reload_after_expiry_retries_next_time(clock: Clock, loader: Loader) -> None:
    cache: TTLCache[str] = TTLCache(10.0, clock=clock)
    await cache.get("k", loader("k"))
    clock.now += 11.0
    loader.fail = True
    with pytest.raises(RuntimeError):
        await cache.get("k", loader("k"))
    loader.fail = False
    assert await cache.get("k", loader("k")) == "k#3"


async def test_concurrent_misses_share_one_load(clock: Clock) -> None:
    cache: TTLCache[str] = TTLCache(10.0, clock=clock)
    release = asyncio.Event()
    calls = 0

    async def slow() -> str:
        nonlocal calls
        calls += 1
        await release.wait()
        return f"v{calls}"

    waiters = [asyncio.create_task(cache.get("k", slow)) for _ in range(32)]
    await asyncio.sleep(0)
    release.set()
    assert await asyncio.gather(*waiters) == ["v1"] * 32
    assert calls == 1


async def test_a_shared_failed_load_fails_every_waiter_and_is_not_cached(clock: Clock) -> None:
    cache: TTLCache[str] = TTLCache(10.0, clock=clock)
    release = asyncio.Event()

    async def broken() -> str:
        await release.wait()
        raise RuntimeError("registry down")

    waiters = [asyncio.create_task(cache.get("k", broken)) for _ in range(3)]
    await asyncio.sleep(0)
    release.set()
    results = await asyncio.gather(*waiters, return_exceptions=True)
    assert all(isinstance(r, RuntimeError) for r in results)
    loader = Loader()
    assert await cache.get("k", loader("k")) == "k#1"


async def test_refresh_ahead_reloads_in_the_background_and_keeps_answering(
    clock: Clock, loader: Loader
) -> None:
    cache: TTLCache[str] = TTLCache(10.0, refresh_after_s=5.0, clock=clock)
    assert await cache.get("k", loader("k")) == "k#1"
    clock.now += 4.0
    assert await cache.get("k", loader("k")) == "k#1"
    assert loader.calls == ["k"]  # not due yet
    clock.now += 2.0  # t = 6: due; the old value answers while one reload runs
    assert await cache.get("k", loader("k")) == "k#1"
    assert await cache.get("k", loader("k")) == "k#1"
    await asyncio.sleep(0)
    assert loader.calls == ["k", "k"]
    assert await cache.get("k", loader("k")) == "k#2"
    clock.now += 9.0  # t = 15: the reloaded entry (from t = 6) is still fresh
    assert await cache.get("k", loader("k")) == "k#2"


async def test_failed_refresh_keeps_the_value_until_it_expires_then_reports(
    clock: Clock, loader: Loader
) -> None:
    cache: TTLCache[str] = TTLCache(10.0, refresh_after_s=5.0, clock=clock)
    await cache.get("k", loader("k"))
    loader.fail = True
    clock.now += 6.0
    assert await cache.get("k", loader("k")) == "k#1"
    await asyncio.sleep(0)
    assert await cache.get("k", loader("k")) == "k#1"  # retried no sooner than a second later
    assert loader.calls == ["k", "k"]
    clock.now += 5.0  # t = 11: expired; the caller sees the error
    with pytest.raises(RuntimeError, match="registry down"):
        await cache.get("k", loader("k"))


# ---------------------------------------------------- kept warm (the loop's timers, on virtual time)


async def test_an_entry_used_within_keep_warm_is_reloaded_with_no_query_to_trigger_it(
    loader: Loader, virtual_time: VirtualTime
) -> None:
    """A sparse caller (one query per TTL and more) never finds its entry expired: it was reloaded in the
    background meanwhile, and the query is answered from the cache without waiting for a load."""
    cache: TTLCache[str] = TTLCache(0.2, refresh_after_s=0.1, keep_warm_s=5.0, clock=virtual_time)
    assert await cache.get("k", loader("k")) == "k#1"
    await virtual_time.advance(0.55)  # past two TTLs, no query
    assert loader.calls == ["k"] * 6  # reloaded every refresh interval: at 0.1, 0.2, ... 0.5
    slow = Loader()
    slow.fail = True  # a query that had to load would raise: it must be answered from the cache
    assert await cache.get("k", slow("k")) == "k#6"
    assert slow.calls == [] and len(loader.calls) == 6


async def test_an_entry_unused_for_keep_warm_goes_cold_and_expires(
    loader: Loader, virtual_time: VirtualTime
) -> None:
    cache: TTLCache[str] = TTLCache(0.1, refresh_after_s=0.05, keep_warm_s=0.17, clock=virtual_time)
    await cache.get("k", loader("k"))
    await virtual_time.advance(0.52)
    # reloaded at 0.05, 0.10 and 0.15, while its last use (the query at 0) was within keep_warm_s
    assert loader.calls == ["k"] * 4
    await virtual_time.advance(0.32)
    assert len(loader.calls) == 4
    assert await cache.get("k", loader("k")) == "k#5"  # expired: this query loads it


async def test_values_not_worth_keeping_warm_are_not_reloaded(
    loader: Loader, virtual_time: VirtualTime
) -> None:
    """An unknown API key (None) is not re-verified in the background: a caller inventing keys would
    otherwise make every gateway ask the registry about each of them forever."""
    cache: TTLCache[str | None] = TTLCache(
        0.1, refresh_after_s=0.05, keep_warm_s=5.0, keep_warm_if=lambda v: v is not None, clock=virtual_time
    )

    async def unknown() -> str | None:
        loader.calls.append("x")
        return None

    assert await cache.get("x", unknown) is None
    assert await cache.get("k", loader("k")) == "k#2"
    await virtual_time.advance(0.32)
    assert loader.calls.count("x") == 1
    assert loader.calls.count("k") == 7  # loaded, then reloaded every 0.05 s


async def test_at_most_max_warm_entries_are_kept_warm(loader: Loader, virtual_time: VirtualTime) -> None:
    cache: TTLCache[str] = TTLCache(
        0.1, refresh_after_s=0.05, keep_warm_s=5.0, max_warm=2, clock=virtual_time
    )
    for key in ("a", "b", "c"):
        await cache.get(key, loader(key))
    await virtual_time.advance(0.32)
    assert loader.calls.count("a") == 7 and loader.calls.count("b") == 7
    assert loader.calls.count("c") == 1


async def test_a_failed_background_reload_is_retried_and_the_value_expires_at_its_ttl(
    loader: Loader, virtual_time: VirtualTime
) -> None:
    """Keeping warm never serves a value past its TTL: with the source down, the entry expires as it would
    without, and the next query gets the error (no stale serving configured here)."""
    cache: TTLCache[str] = TTLCache(0.3, refresh_after_s=0.05, keep_warm_s=5.0, clock=virtual_time)
    await cache.get("k", loader("k"))
    loader.fail = True
    await virtual_time.advance(0.4)
    with pytest.raises(RuntimeError, match="registry down"):
        await cache.get("k", loader("k"))


async def test_dropping_an_entry_stops_keeping_it_warm(loader: Loader, virtual_time: VirtualTime) -> None:
    cache: TTLCache[str] = TTLCache(0.1, refresh_after_s=0.05, keep_warm_s=5.0, clock=virtual_time)
    await cache.get("k", loader("k"))
    cache.drop("k")
    await virtual_time.advance(0.25)
    assert loader.calls == ["k"]


async def test_a_load_under_way_when_the_entry_is_dropped_does_not_put_the_old_value_back() -> None:
    """`PATCH /v1/apps/{app}` drops the gateway's entry: a background reload that had read the app before
    the change must not cache it again for a TTL."""
    release, returned = asyncio.Event(), asyncio.Event()
    source = {"app": "old"}

    async def load() -> str:
        value = source["app"]
        await release.wait()
        returned.set()  # the cache's reload ends in this same step, before the test runs again
        return value

    cache: TTLCache[str] = TTLCache(10.0, refresh_after_s=0.0)
    release.set()
    assert await cache.get("app", load) == "old"
    release.clear()
    returned.clear()
    assert await cache.get("app", load) == "old"  # refresh due: a background reload starts, reading "old"
    await asyncio.sleep(0)
    source["app"] = "new"
    cache.drop("app")
    release.set()
    async with asyncio.timeout(10):  # bounds a broken run only
        await returned.wait()  # the old read completes after the drop
    assert await cache.get("app", load) == "new"


async def test_closing_stops_keeping_warm_and_cancels_the_loads_under_way(virtual_time: VirtualTime) -> None:
    release, calls = asyncio.Event(), []

    async def slow() -> str:
        calls.append(1)
        await release.wait()
        return "v"

    cache: TTLCache[str] = TTLCache(0.1, refresh_after_s=0.05, keep_warm_s=10.0, clock=virtual_time)
    first = asyncio.create_task(cache.get("k", slow))
    await asyncio.sleep(0)
    release.set()
    assert await first == "v"
    release.clear()
    await virtual_time.advance(0.08)  # its keep-warm reload started (at 0.05), and hangs on `release`
    assert len(calls) == 2 and cache._refreshing
    await cache.aclose()
    assert not cache._refreshing and not cache._timers
    await virtual_time.advance(0.2)  # past two TTLs: nothing reloads it any more
    assert len(calls) == 2
