"""Velox heads for the gateway: a user's head is read from Redis (the hot copy,
`infaas:selection:{app}:head:{model}:{user}`), else from the registry (Postgres, the durable copy: Redis
may have been lost or flushed), else started from the mean of the model's users' heads (the registry
computes it), else from the identity head. Every update is written to both."""

from __future__ import annotations

import numpy as np
import redis.asyncio as aioredis

from infaas.clients.registry import AsyncRegistryClient
from infaas.policy.personalization import Head, HeadConfig, new_head
from infaas.schemas.selection import HeadReport, PersonalHead

CONFIG = HeadConfig()


def head_key(app: str, model: str, user: str) -> str:
    return f"infaas:selection:{app}:head:{model}:{user}"


def _head(doc: PersonalHead) -> Head:
    return Head(np.asarray(doc.a_inv), np.asarray(doc.b), doc.error, doc.model_error, doc.updates)


def _doc(user: str, head: Head) -> PersonalHead:
    return PersonalHead(
        user=user,
        a_inv=head.a_inv.tolist(),
        b=head.b.tolist(),
        error=head.error,
        model_error=head.model_error,
        updates=head.updates,
    )


def report(user: str, head: Head, origin: str) -> HeadReport:
    return HeadReport(
        user=user,
        origin=origin,
        updates=head.updates,
        error=round(head.error, 6),
        model_error=round(head.model_error, 6),
        stale=head.stale(CONFIG),
    )


class HeadStore:
    def __init__(self, redis: aioredis.Redis, registry: AsyncRegistryClient) -> None:
        self.redis = redis
        self.registry = registry

    async def get(self, app: str, model: str, model_id: int, user: str, classes: int) -> tuple[Head, str]:
        """The user's head and where it came from (`redis`, `postgres`, `mean of N users`, `identity`)."""
        raw = await self.redis.get(head_key(app, model, user))
        if raw is not None:
            return _head(PersonalHead.model_validate_json(raw)), "redis"
        durable = await self.registry.head(model_id, user)
        if durable is not None:
            await self.redis.set(head_key(app, model, user), durable.model_dump_json())
            return _head(durable), "postgres"
        prior = await self.registry.head_prior(model_id)
        if prior.weights is not None and np.asarray(prior.weights).shape == (classes + 1, classes):
            return new_head(classes, CONFIG, np.asarray(prior.weights)), f"mean of {prior.users} users"
        return new_head(classes, CONFIG), "identity"

    async def put(self, app: str, model: str, model_id: int, user: str, head: Head) -> None:
        doc = _doc(user, head)
        await self.registry.put_head(model_id, doc)  # durable first: a lost Redis copy is re-read from it
        await self.redis.set(head_key(app, model, user), doc.model_dump_json())
