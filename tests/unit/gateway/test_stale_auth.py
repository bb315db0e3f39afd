"""Serving cached keys, apps and models past their TTL while the registry is unreachable: the TTL cache's
staleness policy on a fake clock, and the headers an answer then carries."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from gateway.auth import Authenticator
from gateway.auth_headers import CHALLENGE, STALE_HEADER, headers_for
from gateway.ttl_cache import Source, TTLCache, stale_usable
from infaas.core.errors import InfaasError, Unauthorized, Unavailable
from infaas.schemas.api import Principal
from tests.unit.gateway.cache_fakes import Clock
from tests.unit.virtual_time import VirtualTime


class Registry:
    """A loader whose source answers, is unreachable (`down`), or answers an error (`answer`)."""

    def __init__(self) -> None:
        self.calls = 0
        self.down = False
        self.answer: InfaasError | None = None

    def __call__(self, key: str) -> Callable[[], Awaitable[str | None]]:
        async def load() -> str | None:
            self.calls += 1
            if self.down:
                raise Unavailable("registry is unreachable", service="registry", reason="ConnectError")
            if self.answer is not None:
                raise self.answer
            return None if key.startswith("unknown") else f"{key}#{self.calls}"

        return load


def unreachable(exc: Exception) -> bool:
    return isinstance(exc, InfaasError) and exc.status >= 500


@pytest.fixture
def registry() -> Registry:
    return Registry()


@pytest.fixture
def served(clock: Clock) -> tuple[TTLCache[str | None], list[float]]:
    ages: list[float] = []
    cache: TTLCache[str | None] = TTLCache(
        10.0, stale_max_s=300.0, serve_stale_on=unreachable, on_stale=ages.append, clock=clock
    )
    return cache, ages


def test_the_policy_bounds_the_age() -> None:
    assert stale_usable(299.9, stale_max_s=300.0)
    assert stale_usable(300.0, stale_max_s=300.0)
    assert not stale_usable(300.1, stale_max_s=300.0)
    assert not stale_usable(10.0, stale_max_s=0.0)  # 0: never stale


async def test_an_expired_entry_answers_while_the_registry_is_unreachable(
    clock: Clock, registry: Registry, served: tuple[TTLCache[str | None], list[float]]
) -> None:
    cache, ages = served
    assert await cache.get("k", registry("k")) == "k#1"
    clock.now += 60.0
    registry.down = True
    assert await cache.get("k", registry("k")) == "k#1"
    assert ages == [60.0]
    assert registry.calls == 2  # it did ask first: a registry that answers always wins


async def test_while_down_the_registry_is_asked_again_only_after_a_pause(
    clock: Clock, registry: Registry, served: tuple[TTLCache[str | None], list[float]]
) -> None:
    cache, ages = served
    await cache.get("k", registry("k"))
    clock.now += 60.0
    registry.down = True
    await cache.get("k", registry("k"))
    clock.now += 0.5
    assert await cache.get("k", registry("k")) == "k#1"
    assert registry.calls == 2  # not asked: it failed half a second ago
    clock.now += 1.0
    registry.down = False
    assert await cache.get("k", registry("k")) == "k#3"  # back: fresh again, not stale
    assert ages == [60.0, 60.5]


async def test_nothing_older_than_the_bound_is_served(
    clock: Clock, registry: Registry, served: tuple[TTLCache[str | None], list[float]]
) -> None:
    cache, ages = served
    await cache.get("k", registry("k"))
    clock.now += 300.5
    registry.down = True
    with pytest.raises(Unavailable):
        await cache.get("k", registry("k"))
    assert ages == []


async def test_a_key_never_seen_is_not_served(
    registry: Registry, served: tuple[TTLCache[str | None], list[float]]
) -> None:
    cache, _ = served
    registry.down = True
    with pytest.raises(Unavailable):
        await cache.get("new", registry("new"))


async def test_an_answer_from_the_registry_is_never_overruled_by_stale_data(
    clock: Clock, registry: Registry, served: tuple[TTLCache[str | None], list[float]]
) -> None:
    cache, ages = served
    await cache.get("k", registry("k"))
    clock.now += 60.0
    registry.answer = Unauthorized("unknown API key")  # answered, so not a reason to serve stale
    with pytest.raises(Unauthorized):
        await cache.get("k", registry("k"))
    assert ages == []


async def test_a_key_answered_unknown_stays_unknown_while_the_registry_is_down(
    clock: Clock, registry: Registry, served: tuple[TTLCache[str | None], list[float]]
) -> None:
    cache, _ = served
    await cache.get("k", registry("k"))
    clock.now += 5.0
    cache.drop("k")  # revoked: the next look-up asks the registry, which now says unknown
    assert await cache.get("unknown-k", registry("unknown-k")) is None
    clock.now += 60.0
    registry.down = True
    assert await cache.get("unknown-k", registry("unknown-k")) is None


async def test_without_a_bound_a_down_registry_is_an_error(clock: Clock, registry: Registry) -> None:
    cache: TTLCache[str | None] = TTLCache(10.0, clock=clock)
    await cache.get("k", registry("k"))
    clock.now += 11.0
    registry.down = True
    with pytest.raises(Unavailable):
        await cache.get("k", registry("k"))


def test_a_401_challenges_for_a_bearer_key_and_stale_answers_say_how_old() -> None:
    assert headers_for(401, []) == [(b"www-authenticate", CHALLENGE)]
    assert CHALLENGE == b'Bearer realm="infaas"'
    assert headers_for(200, [12.4, 61.6]) == [(STALE_HEADER, b"62")]
    assert headers_for(403, []) == []


class Hangs:
    """A registry that confirmed "old" and then hangs: each load it starts waits for `release`, then
    answers "fresh"."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.calls = 0

    async def old(self) -> str:
        return "old"

    async def hanging(self) -> str:
        self.calls += 1
        await self.release.wait()
        return "fresh"


@pytest.mark.usefixtures("virtual_time")  # the short wait times out once nothing else can run
async def test_a_registry_that_hangs_is_waited_for_only_briefly_and_its_late_answer_is_kept(
    clock: Clock,
) -> None:
    """Connections accepted, never answered (a stopped registry): an expired entry answers after the short
    wait, later requests do not wait behind the same reload, and the reload's answer, once it comes,
    replaces the stale value."""
    ages: list[float] = []
    cache: TTLCache[str] = TTLCache(
        10.0,
        stale_max_s=300.0,
        serve_stale_on=unreachable,
        on_stale=ages.append,
        stale_wait_s=0.01,
        clock=clock,
    )
    registry = Hangs()
    assert await cache.get("k", registry.old) == "old"
    clock.now += 30.0
    assert await cache.get("k", registry.hanging) == "old"  # after the short wait, not its timeout
    assert await cache.get("k", registry.hanging) == "old"  # the reload under way is not waited for
    assert registry.calls == 1 and ages == [30.0, 30.0]
    registry.release.set()
    for _ in range(3):  # let the background reload finish
        await asyncio.sleep(0)
    assert await cache.get("k", registry.hanging) == "fresh"


@pytest.mark.usefixtures("virtual_time")
async def test_once_a_look_up_finds_the_registry_hung_no_other_cache_waits_for_it(clock: Clock) -> None:
    """The key, app and model caches read one registry: after the key's reload ran out its short wait,
    the app's expired entry answers at once (its own wait is an hour here: waiting would hang the test)
    and reloads in the background; once the registry answers again, look-ups wait for it as before."""
    source, registry = Source(), Hangs()
    keys: TTLCache[str] = TTLCache(
        10.0, stale_max_s=300.0, serve_stale_on=unreachable, stale_wait_s=0.01, source=source, clock=clock
    )
    apps: TTLCache[str] = TTLCache(
        10.0, stale_max_s=300.0, serve_stale_on=unreachable, stale_wait_s=3600.0, source=source, clock=clock
    )
    assert await keys.get("k", registry.old) == "old" and await apps.get("shop", registry.old) == "old"
    assert source.hung_since is None
    clock.now += 30.0
    assert await keys.get("k", registry.hanging) == "old"  # waited 0.01 s, then served stale
    assert source.hung_since == clock.now
    assert await asyncio.wait_for(apps.get("shop", registry.hanging), 5.0) == "old"
    assert registry.calls == 2  # the app's reload went on in the background
    registry.release.set()
    for _ in range(3):
        await asyncio.sleep(0)
    assert source.hung_since is None  # it answered
    assert await apps.get("shop", registry.old) == "fresh"


async def test_a_load_that_fails_slowly_marks_its_source_hung_and_a_quick_failure_clears_it(
    clock: Clock,
) -> None:
    """A read timeout is the registry hanging; a refused connection (or an error it answered) is the
    registry answering, so the next look-up asks it again rather than serving stale unasked."""
    cache: TTLCache[str] = TTLCache(10.0, stale_max_s=300.0, serve_stale_on=unreachable, clock=clock)

    async def times_out() -> str:
        clock.now += 5.0
        raise Unavailable("registry is unreachable", service="registry", reason="ReadTimeout")

    async def refused() -> str:
        raise Unavailable("registry is unreachable", service="registry", reason="ConnectError")

    with pytest.raises(Unavailable):
        await cache.get("k", times_out)
    assert cache.source.hung_since == clock.now
    with pytest.raises(Unavailable):
        await cache.get("k", refused)
    assert cache.source.hung_since is None


def test_the_authenticator_s_caches_share_one_registry() -> None:
    auth = Authenticator(object(), ttl_s=10.0, failures_per_minute=100)  # type: ignore[arg-type]
    assert auth.keys.source is auth.apps.source is auth.models.source is auth.pipelines.source


class KeyRegistry:
    """The registry's key verification, with keys that can be revoked."""

    def __init__(self) -> None:
        self.keys = {"sk_live": Principal(role="app", app="shop")}
        self.verified = 0

    async def verify_key(self, key: str) -> Principal:
        self.verified += 1
        if key not in self.keys:
            raise Unauthorized("unknown API key")
        return self.keys[key]


async def test_a_key_kept_warm_is_never_older_than_the_ttl_so_revoking_it_still_takes_effect(
    virtual_time: VirtualTime,
) -> None:
    """Keeping a sparse caller's key warm moves the registry read off its queries, not the revocation:
    a key revoked while nobody queries is refused within the TTL."""
    registry = KeyRegistry()
    auth = Authenticator(registry, ttl_s=0.2, failures_per_minute=100, keep_warm_s=5.0)  # type: ignore[arg-type]
    for cache in (auth.keys, auth.apps, auth.models, auth.pipelines):
        cache.clock = virtual_time  # the loop's timers and the caches' ages on one (virtual) clock
    assert (await auth.principal("Bearer sk_live", None)).app == "shop"
    await virtual_time.advance(0.45)  # past two TTLs, no query: re-verified in the background meanwhile
    assert registry.verified == 5  # on the query, then every half TTL: at 0.1, 0.2, 0.3 and 0.4
    assert (await auth.principal("Bearer sk_live", None)).app == "shop"
    assert registry.verified == 5  # answered from the cache, no registry read on the query
    del registry.keys["sk_live"]
    await virtual_time.advance(0.25)
    with pytest.raises(Unauthorized):
        await auth.principal("Bearer sk_live", None)
    assert registry.verified > 5
