"""The lease sweeper: profiles again a model whose profiler is gone, or gives up on it.

It lives in the registry because the registry owns model status and attempts (Postgres) and already
sends the profiling tasks; the planner's loops only read the metadata store. Every registry replica
sweeps; the conditional update in `attempts.py` lets one act on an attempt. What it decided and
why is a log line and, when it acts, an event (`GET /v1/events`, kind `profiler`).

While no model is being profiled, the loop (`run`) skips its passes until the registry's version token
(`infaas.data.registry_version`) changes: a model enters profiling only by a commit to `models`, which
writes a new token. An idle pass was a session, a query and a Redis SCAN every second, ~2 ms of CPU and
~16 wake-ups a second on the cores that serve queries (docs/benchmarks.md). A full pass still runs every
`FULL_PASS_EVERY_S`, and whenever the token cannot be read.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import redis
import redis.asyncio as aioredis
from sqlalchemy.orm import Session, sessionmaker

from infaas.clients.profiler import live_leases
from infaas.core.settings.registry import RegistrySettings
from infaas.data.db import ModelRow
from infaas.data.events import event_row
from infaas.data.registry_version import read_version
from infaas.schemas.events import Outcome
from services.registry import repository as repo
from services.registry.profiles import attempts as profile_attempts
from services.registry.profiles.attempts import ProfileQueue
from services.registry.profiles.recovery import Decision, ProfileSnapshot, RecoveryConfig, decide

log = logging.getLogger("infaas.registry")

FULL_PASS_EVERY_S = 30.0
"""The longest the loop skips passes on an unchanged token: covers a commit whose token write was lost
(a registry killed between the two) in a replica that did not restart."""


def recovery_config(settings: RegistrySettings) -> RecoveryConfig:
    return RecoveryConfig(
        grace_s=settings.profile_lease_grace_s,
        queued_max_s=settings.profile_queued_max_s,
        max_attempts=settings.profile_max_attempts,
    )


@dataclass
class ProfileSweeper:
    sessions: sessionmaker[Session]
    redis: redis.Redis
    queue: ProfileQueue
    config: RecoveryConfig
    clock: Callable[[], float] = time.time
    # (model id, attempt) -> when this sweeper first saw it claimed without a live lease. In memory: a
    # restarted registry starts the grace over, which only delays a recovery.
    missing_since: dict[tuple[int, int], float] = field(default_factory=dict)
    profiling: int = field(default=0, init=False)
    """How many models the last pass found queued or being profiled."""
    # The version token read before the last pass, if that pass found no model in profiling.
    _idle_token: str | None = field(default=None, init=False)
    _full_at: float = field(default=float("-inf"), init=False)  # when the last pass ran (`clock`)

    def sweep(self) -> list[tuple[str, Decision]]:
        """One pass; returns the models it acted on and why."""
        now = self.clock()
        leases = live_leases(self.redis)  # a Redis error skips the pass: nothing can be judged without it
        held = {(lease.model_id, lease.attempt) for lease in leases}
        acted: list[tuple[str, Decision]] = []
        seen: set[tuple[int, int]] = set()
        with self.sessions() as session:
            for row in repo.models_in_profiling(session):
                key = (row.id, row.profile_attempt)
                seen.add(key)
                leased = key in held
                if leased or row.profile_worker is None:
                    self.missing_since.pop(key, None)
                    missing_s = 0.0
                else:
                    missing_s = now - self.missing_since.setdefault(key, now)
                since = row.profile_since or row.updated_at
                snapshot = ProfileSnapshot(
                    model=row.name,
                    status=row.status,
                    attempt=row.profile_attempt,
                    tries=row.profile_tries,
                    worker=row.profile_worker,
                    since_s=max(0.0, now - since.timestamp()),
                    leased=leased,
                    missing_s=missing_s,
                    profilers_busy=any(m != row.id for m, _ in held),
                )
                decision = decide(snapshot, self.config)
                if decision.action != "wait" and self._act(session, row, decision):
                    acted.append((row.name, decision))
        for key in set(self.missing_since) - seen:
            del self.missing_since[key]
        self.profiling = len(seen)
        return acted

    def due(self, token: str | None) -> bool:
        """Whether a pass is due under the version `token` (None: none could be read): unless the last
        pass found no model in profiling under this same token, less than `FULL_PASS_EVERY_S` ago."""
        idle = token is not None and token == self._idle_token
        return not idle or self.clock() - self._full_at >= FULL_PASS_EVERY_S

    def sweep_under(self, token: str | None) -> list[tuple[str, Decision]]:
        """A pass, with the version `token` read before it: a commit after the read shows as a new
        token next time, one before it is seen by this pass."""
        now = self.clock()
        self._idle_token = None
        acted = self.sweep()
        self._full_at = now
        if self.profiling == 0:
            self._idle_token = token
        return acted

    async def turn(self, ar: aioredis.Redis) -> list[tuple[str, Decision]]:
        """One turn of the loop: the token read on the event loop (`ar`, an asyncio client on the same
        Redis), and a pass in a thread only if one is due."""
        token = await read_version(ar)
        if not self.due(token):
            return []
        return await asyncio.to_thread(self.sweep_under, token)

    def _act(self, session: Session, row: ModelRow, decision: Decision) -> bool:
        attempt, name = row.profile_attempt, row.name
        if decision.action == "requeue":
            done = profile_attempts.requeue(session, self.queue, row, attempt=attempt, reason=decision.reason)
            outcome: Outcome = "done"
            action = "reprofile"
        else:
            done = profile_attempts.give_up(session, row, attempt=attempt, reason=decision.reason)
            outcome, action = "failed", "give_up"
        if not done:  # another replica acted on this attempt first
            return False
        log.warning("%s", decision.reason)
        session.add(
            event_row(kind="profiler", action=action, outcome=outcome, reason=decision.reason, model=name)
        )
        session.commit()
        return True

    async def run(self, interval_s: float, ar: aioredis.Redis) -> None:
        """A `turn` every `interval_s` until cancelled; a failed pass is logged and the next one tried."""
        while True:
            try:
                await self.turn(ar)
            except Exception as exc:  # Redis or Postgres away for a moment: the next pass retries
                log.warning("profile sweep failed: %s: %s", type(exc).__name__, exc)
            await asyncio.sleep(interval_s)
