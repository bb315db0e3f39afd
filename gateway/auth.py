"""Who is calling: API keys verified by the registry, remembered for a few seconds; an address that keeps
sending unknown keys is refused for a while (`gateway.limits.FailureLimiter`)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Awaitable, Callable
from typing import Any

from gateway.auth_headers import note_stale
from gateway.limits import FailureLimiter, FailurePolicy
from gateway.ttl_cache import Source, TTLCache
from infaas.clients.registry import AsyncRegistryClient
from infaas.core.errors import Forbidden, InfaasError, NotFound, TooManyRequests, Unauthorized
from infaas.schemas.api import NAME_PATTERN, AppInternal, ModelInternal, Principal
from infaas.schemas.pipelines import Pipeline

_NAME = re.compile(NAME_PATTERN)


READ_EVERY_TTLS = 12
"""An entry the registry's version token keeps renewing is still read from the registry every this many
TTLs (2 minutes at the default 10 s): what bounds how long a commit whose token was lost (the registry
killed between the two) goes unseen, and how soon a registry that stopped answering is noticed."""


def _registry_unreachable(exc: Exception) -> bool:
    """The registry did not answer (refused, timed out) or failed (5xx): not an answer about the key."""
    return isinstance(exc, InfaasError) and exc.status >= 500


class Authenticator:
    def __init__(
        self,
        registry: AsyncRegistryClient,
        *,
        ttl_s: float,
        failures_per_minute: int,
        stale_max_s: float = 0.0,
        keep_warm_s: float = 0.0,
        revalidate: Callable[[], Awaitable[str | None]] | None = None,
    ) -> None:
        """`revalidate`: the registry's version token (`infaas.data.registry_version.read_version`)."""
        self.registry = registry
        self.failures = FailureLimiter(FailurePolicy(failures_per_minute))
        # One registry behind every cache: once a look-up finds it hung, no other waits for it.
        registry_state = Source()

        def cache(kind: str, keep_warm_if: Callable[[Any], bool] = lambda _value: True) -> TTLCache[Any]:
            # Busy entries reload in the background after half their life, so a query never waits for
            # the registry because an entry it uses all the time happened to expire; entries a query
            # used within `keep_warm_s` do too, however sparse their queries. While the registry is
            # unreachable, what it confirmed within `stale_max_s` still answers (a key it answered
            # unknown stays unknown: that is a value in the cache, not a failure to load one).
            return TTLCache(
                ttl_s,
                refresh_after_s=ttl_s / 2,
                stale_max_s=stale_max_s,
                serve_stale_on=_registry_unreachable,
                on_stale=lambda age_s: note_stale(kind, age_s),
                keep_warm_s=keep_warm_s,
                keep_warm_if=keep_warm_if,
                source=registry_state,
                revalidate=revalidate,
                read_every_s=ttl_s * READ_EVERY_TTLS,
            )

        # A key is kept warm only when known: an invented one would be re-verified for as long as it was
        # tried. Keeping it warm keeps its verifying closure, and so the key, in memory while it is used.
        self.keys: TTLCache[Principal | None] = cache("key", lambda principal: principal is not None)
        self.apps: TTLCache[AppInternal] = cache("app")
        self.models: TTLCache[ModelInternal] = cache("model")
        self.pipelines: TTLCache[Pipeline] = cache("pipeline")

    async def aclose(self) -> None:
        """Stop the caches' background reloads (the gateway's shutdown)."""
        for cache in (self.keys, self.apps, self.models, self.pipelines):
            await cache.aclose()

    async def principal(self, authorization: str | None, client: str | None) -> Principal:
        """The caller behind a bearer key. `client` is the caller's address (None: not limited); an
        address out of failed verifications gets 429 before its key is looked at, so it learns
        nothing about any key until its budget refills."""
        wait = self.failures.retry_after_s(client)
        if wait > 0:
            raise TooManyRequests("too many unknown API keys from this address", retry_after_s=round(wait, 3))
        if not authorization:
            raise Unauthorized("missing API key: send 'Authorization: Bearer <key>'")
        scheme, _, key = authorization.partition(" ")
        key = key.strip()
        if scheme.lower() != "bearer" or not key:
            raise Unauthorized("malformed Authorization header: expected 'Bearer <key>'")
        # Cache by the key's hash so plain keys do not linger in memory as dictionary keys.
        digest = hashlib.sha256(key.encode()).hexdigest()

        async def verify() -> Principal | None:
            try:
                return await self.registry.verify_key(key)
            except Unauthorized:
                return None  # remembered too, so guessing keys costs the registry nothing extra

        principal = await self.keys.get(digest, verify)
        if principal is None:
            self.failures.failed(client)  # a remembered unknown key counts too: it is another guess
            raise Unauthorized("unknown API key")
        return principal

    async def app(self, principal: Principal, name: str) -> AppInternal:
        """The app (404 if unknown), if this caller may use it (403 otherwise)."""
        if not _NAME.fullmatch(name):
            raise NotFound(f"no app named {name!r}")  # no such name was ever registered: nothing to ask
        app = await self.apps.get(name, lambda: self.registry.app(name))
        if principal.role != "admin" and principal.app != name:
            raise Forbidden(f"this key belongs to app {principal.app!r}, not {name!r}")
        return app

    async def app_of(self, model: ModelInternal) -> AppInternal:
        """The settings of the app that owns a model (the caller was checked against the model)."""
        return await self.apps.get(model.app, lambda: self.registry.app(model.app))

    async def model(self, principal: Principal, name: str) -> ModelInternal:
        if not _NAME.fullmatch(name):
            raise NotFound(f"no model named {name!r}")
        model = await self.models.get(name, lambda: self.registry.model_by_name(name))
        if principal.role != "admin" and principal.app != model.app:
            raise Forbidden(f"model {name!r} belongs to another app")
        return model

    async def pipeline(self, principal: Principal, name: str) -> Pipeline:
        if not _NAME.fullmatch(name):
            raise NotFound(f"no pipeline named {name!r}")
        pipeline = await self.pipelines.get(name, lambda: self.registry.pipeline(name))
        if principal.role != "admin" and principal.app != pipeline.app:
            raise Forbidden(f"pipeline {name!r} belongs to another app")
        return pipeline

    def forget_model(self, name: str, app: str | None) -> None:
        self.models.drop(name)
        if app:
            self.apps.drop(app)
