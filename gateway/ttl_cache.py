"""A small TTL cache for what the gateway looks up per request (keys, apps, models).

Looking these up in the registry on every query would put a database read on the hot path; a few
seconds of staleness (documented in `docs/architecture.md`) is the price. Under load two more things
matter: concurrent misses of one key share a single load (no stampede on the registry when an entry
expires with 32 queries in flight), and with `refresh_after_s` an entry that is still fresh but old
is reloaded in the background while it keeps answering, so a busy key never expires on the hot path.
With `keep_warm_s`, an entry that answered a query within that long is also reloaded in the background
when its refresh is due, with no query to trigger it: an app that sends a query every 30 s would
otherwise find its key, app and model expired every time and wait for three registry reads (10–18 ms
against ~1 ms for the query itself). Values are never older than `ttl_s` either way; what changes is
who waits for the reload. `keep_warm_if` says which values are worth it (an unknown key is not: every
key a hostile caller invents would be re-verified forever), and at most `max_warm` entries are kept warm
at once, the rest load on their next query as before.

An entry is served older than `ttl_s` only while its source cannot answer (a load fails with an error
`serve_stale_on` accepts: the registry unreachable or failing), and only up to `stale_max_s` after it
was loaded (`stale_usable`); each such answer is reported to `on_stale` with the entry's age, and the
next load is tried after `_RETRY_REFRESH_S` so a source that is down is not asked on every request.
A source that hangs instead (connections accepted, never answered: a stopped or swapping registry) is
waited for only `stale_wait_s` while a usable stale value exists; the reload goes on in the background.
Once one wait has run out, the source counts as hung (`Source`, shared by every cache that reads it) and
no query waits for it again: an expired entry with a usable value answers at once and reloads in the
background, until a load comes back from the source (an answer, or an error quicker than `stale_wait_s`).
Without it, each of the gateway's caches (key, app, model) would wait out its own `stale_wait_s` in
turn, and again after every retry: 0.75 s added to one query in a few while the registry hangs.
An error the source *answered* (an unknown key is a value here, not an error) replaces nothing.

With `revalidate` (the source's version: the registry's token, `infaas.data.registry_version`), a
reload first reads the version, and an entry loaded under the same version is renewed from that moment
without a load: the source committed nothing since that could change it. The load itself, a registry
request, costs the shared cores 3–10 ms; the version read, one Redis GET.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

from infaas.data.registry_version import still_current

V = TypeVar("V")

_RETRY_REFRESH_S = 1.0  # after a background reload starts (or a load fails), the next try waits this long


class Source:
    """Whether the source behind one or more caches is hung: a load from it outlasted `stale_wait_s`
    (the `clock` time when it was first found so; None while it answers)."""

    def __init__(self) -> None:
        self.hung_since: float | None = None

    def hung(self, now: float) -> None:
        if self.hung_since is None:
            self.hung_since = now

    def answered(self) -> None:
        self.hung_since = None


def stale_usable(age_s: float, *, stale_max_s: float) -> bool:
    """Whether an entry loaded `age_s` ago may answer while its source is unreachable."""
    return age_s <= stale_max_s


class TTLCache(Generic[V]):
    def __init__(
        self,
        ttl_s: float,
        *,
        max_entries: int = 10_000,
        refresh_after_s: float | None = None,
        stale_max_s: float = 0.0,
        serve_stale_on: Callable[[Exception], bool] = lambda _exc: False,
        on_stale: Callable[[float], None] | None = None,
        stale_wait_s: float = 0.25,
        keep_warm_s: float = 0.0,
        keep_warm_if: Callable[[V], bool] = lambda _value: True,
        max_warm: int = 1_000,
        source: Source | None = None,
        revalidate: Callable[[], Awaitable[str | None]] | None = None,
        read_every_s: float = float("inf"),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`revalidate`: the source's current version (None: unknown). A reload that finds the version
        its entry was read under renews the entry without a load, for at most `read_every_s` after that
        read: then it is read from the source again."""
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self.refresh_after_s = refresh_after_s
        self.stale_max_s = stale_max_s
        self.serve_stale_on = serve_stale_on
        self.on_stale = on_stale
        self.stale_wait_s = stale_wait_s
        self.source = source if source is not None else Source()
        self.revalidate = revalidate
        self.read_every_s = read_every_s
        self.clock = clock
        self.keep_warm_s = keep_warm_s if refresh_after_s is not None else 0.0
        self.keep_warm_if = keep_warm_if
        self.max_warm = max_warm
        # key -> (expires at, background refresh due at, value, loaded at, next load try while stale)
        self._data: OrderedDict[str, tuple[float, float, V, float, float]] = OrderedDict()
        # key -> the source's version read before its last load, and when that load started
        self._versions: dict[str, tuple[str | None, float]] = {}
        self._loading: dict[str, asyncio.Future[V]] = {}
        self._refreshing: set[asyncio.Task[None]] = set()
        # kept warm: key -> when a query last used it, how to reload it, the timer of its next reload
        self._used: dict[str, float] = {}
        self._loaders: dict[str, Callable[[], Awaitable[V]]] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._closed = False

    async def get(self, key: str, load: Callable[[], Awaitable[V]]) -> V:
        now = self.clock()
        hit = self._data.get(key)
        if hit is not None:
            if hit[0] > now:
                if key in self._timers:
                    self._used[key] = now
                if hit[1] <= now and key not in self._loading:
                    # A failed background reload keeps the old value until it expires; the load after
                    # that reports the error to its caller.
                    self._data[key] = (hit[0], now + _RETRY_REFRESH_S, *hit[2:])
                    self._start_load(key, load)
                return hit[2]
            if hit[4] > now and stale_usable(now - hit[3], stale_max_s=self.stale_max_s):
                return self._serve_stale(hit, now)  # the last load failed a moment ago: do not ask yet
        try:
            pending = self._loading.get(key)
            if hit is not None and stale_usable(now - hit[3], stale_max_s=self.stale_max_s):
                # Expired, with a value still usable: wait for its reload only briefly. A source that
                # hangs (accepts, never answers) must not hold queries for its whole timeout; while a
                # reload is under way already, or once the source is known to hang, the value answers
                # at once.
                if pending is not None:
                    return self._serve_stale(hit, now)
                pending = self._start_load(key, load)
                if self.source.hung_since is not None:
                    self._data[key] = (*hit[:4], now + _RETRY_REFRESH_S)
                    return self._serve_stale(hit, now)
                try:
                    return await asyncio.wait_for(asyncio.shield(pending), self.stale_wait_s)
                except TimeoutError:
                    now = self.clock()
                    self.source.hung(now)
                    self._data[key] = (*hit[:4], now + _RETRY_REFRESH_S)
                    return self._serve_stale(hit, now)
            if pending is not None:  # someone is loading it already: share that load and its outcome
                return await asyncio.shield(pending)
            return await self._load(key, load)
        except Exception as exc:
            hit = self._data.get(key)
            now = self.clock()
            if (
                hit is None
                or not self.serve_stale_on(exc)
                or not stale_usable(now - hit[3], stale_max_s=self.stale_max_s)
            ):
                raise
            self._data[key] = (*hit[:4], now + _RETRY_REFRESH_S)
            return self._serve_stale(hit, now)

    def _serve_stale(self, hit: tuple[float, float, V, float, float], now: float) -> V:
        if self.on_stale is not None:
            self.on_stale(now - hit[3])
        return hit[2]

    async def _load(self, key: str, load: Callable[[], Awaitable[V]]) -> V:
        return await asyncio.shield(self._start_load(key, load))

    def _start_load(self, key: str, load: Callable[[], Awaitable[V]]) -> asyncio.Future[V]:
        """A load running on a task of its own, whose future every caller shares: one that stops waiting
        (a timeout, a cancelled request) does not cancel it for the others."""
        future: asyncio.Future[V] = asyncio.get_running_loop().create_future()
        self._loading[key] = future

        async def run() -> None:
            asked = self.clock()  # before the version: a commit after it shows in the next one
            try:
                version = await self._version()
            except BaseException:  # cancelled (the cache closing): no caller waits on it for good
                if self._loading.get(key) is future:
                    del self._loading[key]
                future.cancel()
                raise
            hit, read = self._data.get(key), self._versions.get(key)
            if (
                hit is not None
                and read is not None
                and still_current(read[0], read[1], version, now=asked, read_every_s=self.read_every_s)
            ):
                # Nothing committed since this value was read: renewed, and the source not asked.
                if self._loading.get(key) is future:
                    del self._loading[key]
                    self._put(key, hit[2], (version, read[1]), at=asked)
                    self._after_put(key, hit[2], load)
                future.set_result(hit[2])
                return
            started = self.clock()
            try:
                value = await load()
            except BaseException as exc:
                if isinstance(exc, Exception):
                    # A failure that took longer than a query would wait is the source hanging (a read
                    # timeout); a quick one (refused, an error answered) is the source answering.
                    now = self.clock()
                    if self.serve_stale_on(exc) and now - started >= self.stale_wait_s:
                        self.source.hung(now)
                    else:
                        self.source.answered()
                future.set_exception(exc)
                future.exception()  # waiters re-raise it; an unawaited one must not warn
                if key in self._loaders and key in self._data:  # kept warm: try again while it is fresh
                    self._warm_later(key, _RETRY_REFRESH_S)
                return
            finally:
                current = self._loading.get(key) is future
                if current:
                    del self._loading[key]
            self.source.answered()
            if not current:  # dropped while it loaded: its callers get what it read, the cache does not
                future.set_result(value)
                return
            self._put(key, value, (version, asked))
            self._after_put(key, value, load)
            future.set_result(value)

        task = asyncio.create_task(run())
        self._refreshing.add(task)
        task.add_done_callback(self._refreshing.discard)
        return future

    async def _version(self) -> str | None:
        if self.revalidate is None:
            return None
        try:
            return await self.revalidate()
        except Exception:  # unknown: the entry is loaded
            return None

    def _put(self, key: str, value: V, read: tuple[str | None, float], *, at: float | None = None) -> None:
        """Cache `value`, confirmed at `at` (default: now); `read`: the source's version before the load
        that read it, and when that load started."""
        now = self.clock() if at is None else at
        refresh = now + self.refresh_after_s if self.refresh_after_s is not None else float("inf")
        self._data[key] = (now + self.ttl_s, refresh, value, now, 0.0)
        self._versions[key] = read
        self._data.move_to_end(key)
        while len(self._data) > self.max_entries:
            evicted = self._data.popitem(last=False)[0]
            self._versions.pop(evicted, None)
            self._cool(evicted)

    def _after_put(self, key: str, value: V, load: Callable[[], Awaitable[V]]) -> None:
        if self.keep_warm_s > 0 and self.keep_warm_if(value):
            self._keep_warm(key, load)
        else:
            self._cool(key)

    def _keep_warm(self, key: str, load: Callable[[], Awaitable[V]]) -> None:
        """After a load: reload it when its refresh is due if a query used it within `keep_warm_s` (a
        load counts as a use: a query asked for it)."""
        if key not in self._timers:
            if len(self._timers) >= self.max_warm:
                return
            self._used[key] = self.clock()
        self._loaders[key] = load
        self._warm_later(key, self.refresh_after_s or self.ttl_s)

    def _warm_later(self, key: str, delay_s: float) -> None:
        if self._closed:
            return
        old = self._timers.get(key)
        if old is not None:
            old.cancel()
        self._timers[key] = asyncio.get_running_loop().call_later(delay_s, self._warm, key)

    def _warm(self, key: str) -> None:
        hit, load = self._data.get(key), self._loaders.get(key)
        now = self.clock()
        if hit is None or load is None or hit[0] <= now or now - self._used.get(key, 0.0) > self.keep_warm_s:
            self._cool(key)  # gone, expired or unused for long: its next query loads it, as without
            return
        if key in self._loading:  # a query's reload is under way; it keeps the entry warm when done
            return
        self._start_load(key, load)

    def _cool(self, key: str) -> None:
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()
        self._used.pop(key, None)
        self._loaders.pop(key, None)

    def drop(self, key: str) -> None:
        """Forget `key` (its source changed): a load under way when it is dropped read the old value, so
        what it returns is not cached; the next query loads the key again."""
        self._data.pop(key, None)
        self._versions.pop(key, None)
        self._loading.pop(key, None)
        self._cool(key)

    async def aclose(self) -> None:
        """Stop keeping entries warm and cancel the loads under way (the gateway's shutdown). Without
        it, a keep-warm timer that fired while the event loop was closing started a load on a task
        nobody would await or cancel: destroyed pending, with a warning, at the next collection."""
        self._closed = True
        for key in list(self._timers):
            self._cool(key)
        running = list(self._refreshing)
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
