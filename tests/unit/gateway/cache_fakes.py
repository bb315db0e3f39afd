"""Fakes for the gateway's TTL cache tests: a clock the test moves, and a loader that counts its calls
(the `clock` and `loader` fixtures in this folder's conftest)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Loader:
    """Counts calls and returns `<key>#<call number>`, or raises when told to."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.fail = False

    def __call__(self, key: str) -> Callable[[], Awaitable[str]]:
        async def load() -> str:
            self.calls.append(key)
            if self.fail:
                raise RuntimeError("registry down")
            return f"{key}#{len(self.calls)}"

        return load
