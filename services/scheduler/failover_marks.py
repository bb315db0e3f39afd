"""Answers from a fallback variant say so: the failover marks the planner writes
(`infaas.data.failover_marks`), re-read by the snapshot cache when the planner announces a change (and on
a slow timer, in case the announcement was missed), stamped on each answer they concern."""

from __future__ import annotations

import logging

import redis.asyncio as aioredis

from infaas.clients.envelope import Answer
from infaas.data import failover_marks

log = logging.getLogger("infaas.scheduler")


class FailoverMarks:
    """The fallback variants now answering for a failed one: variant → `{from, reason}`."""

    def __init__(self) -> None:
        self.serving: dict[str, dict[str, str]] = {}

    async def refresh(self, redis: aioredis.Redis) -> None:
        try:
            self.serving = await failover_marks.read(redis)
        except Exception as exc:  # Redis briefly away: keep what was read last
            log.warning("reading failover marks failed: %s", exc)

    def stamp(self, answer: Answer) -> Answer:
        """The answer, with `failover` set when a fallback variant computed it."""
        if not self.serving:
            return answer
        found = self.serving.get(answer.variant)
        return answer if found is None else answer._replace(failover=found)
