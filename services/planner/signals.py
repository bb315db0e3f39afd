"""Signals from the registry to the planner's idle loops, so that an idle loop reads nothing.

The offline-jobs loop and the pipeline tuner each follow a counter the registry increments after a commit
(`SUBMITTED_KEY`, `store.PIPELINES_CHANGED`). Read every tick, the two counters were three Redis round
trips a second from an idle planner, each ~1 ms of its CPU on the cores that serve queries
(docs/benchmarks.md). The registry also publishes the counter's topic on `store.PLANNER_SIGNALS` after
each increment; a loop with nothing to do asks `take(topic)` and reads its counter only when the topic
was published since its last ask.

The counter stays the truth and the message only a hint: a message lost (the subscription dropped, Redis
restarted) makes `take` answer True for every topic, once, when the subscription is back, and True while
there is none; a loop still reads its counter at its idle interval whatever `take` says.
"""

from __future__ import annotations

import asyncio
import contextlib

import redis.asyncio as aioredis

from infaas.core.aio import stop_tasks
from infaas.data import store
from infaas.data.subscription import keep_subscribed

TOPICS = frozenset({store.JOBS_TOPIC, store.PIPELINES_TOPIC})


class Signals:
    def __init__(self, redis: aioredis.Redis, channel: str = store.PLANNER_SIGNALS) -> None:
        self.redis = redis
        self.channel = channel
        self.subscriptions = 0  # subscriptions taken, the first included
        self._listening = False
        self._heard: set[str] = set()  # topics published since each one's last `take`
        self._taken: dict[str, int] = {}  # topic -> the subscription of its last `take`
        self._subscribed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self, timeout_s: float = 5.0) -> None:
        """Subscribe, waiting up to `timeout_s` for it; meanwhile (and after, until it is taken) every
        topic counts as signalled."""
        self._task = asyncio.create_task(self._listen(), name="planner-signals")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._subscribed.wait(), timeout=timeout_s)

    async def stop(self) -> None:
        await stop_tasks(self._task)
        self._task = None

    def take(self, topic: str) -> bool:
        """Whether `topic` may have been published since the last `take` of it (and forget it): True
        when it was, while there is no subscription, and once after each new one."""
        if not self._listening:
            return True
        if self._taken.get(topic) != self.subscriptions:
            self._taken[topic] = self.subscriptions
            self._heard.discard(topic)
            return True
        if topic in self._heard:
            self._heard.discard(topic)
            return True
        return False

    async def _listen(self) -> None:
        try:
            await keep_subscribed(
                self.redis,
                [self.channel],
                self._on_message,
                what="planner signals",
                on_subscribed=self._on_subscribed,
                on_lost=self._on_lost,
            )
        finally:
            self._on_lost()

    def _on_lost(self) -> None:
        self._listening = False

    def _on_subscribed(self, n: int) -> None:
        # Listening from here on: what was published before is what `take` answers True once for, every
        # topic.
        self.subscriptions = n
        self._listening = True
        self._subscribed.set()

    def _on_message(self, _channel: bytes, data: bytes) -> None:
        if (topic := _topic(data)) in TOPICS:
            self._heard.add(topic)


def _topic(data: object) -> str:
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else str(data)
