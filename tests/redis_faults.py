"""Faults a real Redis client can show that a test cannot provoke on demand, made on purpose around it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import redis
import redis.asyncio as aioredis


class CancelAsLostConnection:
    """A real client's subscription, except that a cancel during its read comes out as the lost
    connection a client can report when its socket is closed under the read (seen in a CI run: a loop
    that takes its subscription again after a loss then subscribed again instead of stopping).
    `listening` is set once a read is under way."""

    def __init__(self, client: aioredis.Redis) -> None:
        self.inner = client.pubsub()
        self.listening = asyncio.Event()

    async def subscribe(self, *channels: str) -> None:
        await self.inner.subscribe(*channels)

    async def listen(self) -> AsyncIterator[dict[str, Any]]:
        self.listening.set()
        try:
            async for message in self.inner.listen():
                yield message
        except asyncio.CancelledError:
            raise redis.ConnectionError("Connection closed by server.") from None

    async def aclose(self) -> None:
        await self.inner.aclose()  # type: ignore[no-untyped-call]


def cancel_as_lost_connection(client: aioredis.Redis) -> list[CancelAsLostConnection]:
    """Make every subscription `client` opens from now on a `CancelAsLostConnection`; returns the list
    they are added to, in order."""
    opened: list[CancelAsLostConnection] = []
    plain = aioredis.Redis(connection_pool=client.connection_pool)

    def pubsub(**_: Any) -> CancelAsLostConnection:
        opened.append(CancelAsLostConnection(plain))
        return opened[-1]

    client.pubsub = pubsub  # type: ignore[assignment,method-assign]
    return opened


def gate_resubscriptions(client: aioredis.Redis) -> asyncio.Event:
    """Hold every subscription `client` opens after its first until the returned event is set: the time
    a lost subscription is away, made as long as a test needs to publish into it."""
    gate = asyncio.Event()
    opened = 0
    plain = client.pubsub

    def pubsub(**kwargs: Any) -> Any:
        nonlocal opened
        opened += 1
        inner = plain(**kwargs)
        if opened == 1:
            return inner
        subscribe = inner.subscribe

        async def held(*channels: str) -> None:
            await gate.wait()
            await subscribe(*channels)

        inner.subscribe = held  # type: ignore[method-assign]
        return inner

    client.pubsub = pubsub  # type: ignore[method-assign]
    return gate


def kill_connections(sync: redis.Redis, name: str) -> int:
    """Close this Redis server's connections named `name` (and no other suite's), as a network cut would;
    returns how many."""
    killed = 0
    for client in sync.client_list():
        if client.get("name") == name:
            sync.client_kill_filter(_id=client["id"])
            killed += 1
    return killed
