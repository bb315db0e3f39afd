"""Who is calling: API keys verified by the registry, remembered for a few seconds; an address that keeps
sending unknown keys is refused for a while (`gateway.limits.FailureLimiter`)."""

from __future__ import annotations

import hashlib
import re

from gateway.limits import FailureLimiter, FailurePolicy
from gateway.ttl_cache import TTLCache
from infaas.clients.registry import AsyncRegistryClient
from infaas.core.errors import Forbidden, NotFound, TooManyRequests, Unauthorized
from infaas.schemas.api import NAME_PATTERN, AppInternal, ModelInternal, Principal

_NAME = re.compile(NAME_PATTERN)


class Authenticator:
    def __init__(self, registry: AsyncRegistryClient, *, ttl_s: float, failures_per_minute: int) -> None:
        self.registry = registry
        self.failures = FailureLimiter(FailurePolicy(failures_per_minute))
        # Busy entries reload in the background after half their life, so a query never waits for
        # the registry because an entry it uses all the time happened to expire.
        refresh = ttl_s / 2
        self.keys: TTLCache[Principal | None] = TTLCache(ttl_s, refresh_after_s=refresh)
        self.apps: TTLCache[AppInternal] = TTLCache(ttl_s, refresh_after_s=refresh)
        self.models: TTLCache[ModelInternal] = TTLCache(ttl_s, refresh_after_s=refresh)

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

    def forget_model(self, name: str, app: str | None) -> None:
        self.models.drop(name)
        if app:
            self.apps.drop(app)
