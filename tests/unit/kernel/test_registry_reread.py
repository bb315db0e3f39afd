"""`infaas.data.registry_version.reread`: when a cache outside the gateway renews an expired entry of
registry reads on the registry's version token, and when it asks the registry again (pure logic: the
token and the read are functions the test supplies)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from infaas.data.registry_version import Read, reread


class Registry:
    """What the registry answers, and how often it was asked."""

    def __init__(self) -> None:
        self.value = "v1"
        self.reads = 0

    async def read(self) -> str:
        self.reads += 1
        return self.value


def tokens(*values: str | None) -> Callable[[], Awaitable[str | None]]:
    """The registry's version token as Redis gives it, one value per read."""
    it = iter(values)

    async def token() -> str | None:
        return next(it)

    return token


async def test_a_first_read_keeps_the_token_read_before_it() -> None:
    registry = Registry()
    entry = await reread(None, registry.read, token=tokens("t1"), now=10.0)
    assert entry == Read("v1", "t1", 10.0, 10.0) and registry.reads == 1


async def test_an_unchanged_token_renews_without_asking_the_registry() -> None:
    registry = Registry()
    entry = await reread(Read("v1", "t1", 10.0, 10.0), registry.read, token=tokens("t1"), now=15.0)
    assert entry == Read("v1", "t1", 10.0, 15.0) and registry.reads == 0


@pytest.mark.parametrize("token", ["t2", None], ids=["a new token", "no token in Redis"])
async def test_a_new_token_or_none_asks_the_registry(token: str | None) -> None:
    registry = Registry()
    registry.value = "v2"
    entry = await reread(Read("v1", "t1", 10.0, 10.0), registry.read, token=tokens(token), now=15.0)
    assert entry == Read("v2", token, 15.0, 15.0) and registry.reads == 1


async def test_without_a_token_source_every_expiry_asks_the_registry() -> None:
    registry = Registry()
    entry = await reread(Read("v1", None, 10.0, 10.0), registry.read, token=None, now=15.0)
    assert entry.read_at == 15.0 and registry.reads == 1


async def test_an_entry_read_long_ago_is_read_again_under_the_same_token() -> None:
    registry = Registry()
    old = Read("v1", "t1", 10.0, 100.0)
    renewed = await reread(old, registry.read, token=tokens("t1"), now=129.0, read_every_s=120.0)
    assert renewed.read_at == 10.0 and registry.reads == 0
    again = await reread(old, registry.read, token=tokens("t1"), now=130.0, read_every_s=120.0)
    assert again == Read("v1", "t1", 130.0, 130.0) and registry.reads == 1


async def test_a_failed_read_is_the_callers_to_handle() -> None:
    async def away() -> str:
        raise ConnectionError("registry away")

    with pytest.raises(ConnectionError):
        await reread(Read("v1", "t0", 0.0, 0.0), away, token=tokens("t1"), now=5.0)
