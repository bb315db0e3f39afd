"""Keeping the registry's publication in Redis: every ready variant (its profile and its model's and app's
indexes) is published at start, and again whenever Redis is found to have lost it.

Redis holds nothing that Postgres cannot restore (docs/architecture.md, Stores), but nothing restores it
by itself: after Redis came back empty, schedulers refreshing their snapshot would find no variant and
answer 422 "no profiled variant" for models the registry lists as ready. A complete publication ends
with the `published` sentinel (`infaas.data.store.publish_variants(complete=True)`), so its absence is a
cheap, exact sign of the loss; `keep_published` checks it every second. Several registry processes may
run this loop: each republication writes the same values (idempotent), so they cannot disagree.

The check is one round trip on the event loop (`present`: the sentinel and the version token); only
when one is missing, or a token write failed, does the loop go to a thread (the database and the
republication are blocking). A thread hand-off every second was ~6 wake-ups of the registry's threads
on the cores that serve queries (docs/benchmarks.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass

import redis
import redis.asyncio as aioredis
from sqlalchemy.orm import Session, sessionmaker

from infaas.data import store
from infaas.data.events import record_event
from infaas.data.registry_version import REGISTRY_VERSION, VersionWriter
from services.registry import repository as repo
from services.registry.parity import publish as parity_publish
from services.registry.profiles.reports import to_profile

log = logging.getLogger("infaas.registry")

CHECK_EVERY_S = 1.0  # a lost publication costs queries until it is back: look often, it is one EXISTS
PRESENT_TIMEOUT_S = 1.0  # a Redis that does not answer the check on the loop is left to the thread's


@dataclass(frozen=True)
class Publication:
    models: int
    variants: int
    apps: int

    def summary(self) -> str:
        return f"{self.models} models, {self.variants} variants, {self.apps} apps"


def republish(session: Session, r: redis.Redis) -> Publication:
    """Publish every ready variant, sentinel last. A model deleted (or sent to re-profiling) while this
    ran is unpublished by whoever changed it after their commit; what this call published from the
    earlier read is checked against Postgres once more and taken out if it is no longer ready."""
    ready = repo.ready_variants(session)
    profiles = [to_profile(v, m, a) for v, m, a in ready]
    store.publish_variants(r, profiles, complete=True)
    parity_publish.publish_all(session, r)  # the hidden parity variants, which the sentinel does not cover
    session.rollback()  # end the read's transaction: the check below must see what committed since
    still = {v.id for v, _, _ in repo.ready_variants(session)}
    for p in profiles:
        if p.id not in still:
            store.unpublish_variants(r, model=p.model, app=p.app, vids=[p.id])
    return Publication(
        models=len({p.model for p in profiles}), variants=len(profiles), apps=len({p.app for p in profiles})
    )


def republish_if_lost(sessions: sessionmaker[Session], r: redis.Redis) -> Publication | None:
    """Republish when the sentinel is gone; says why in the log and the event log."""
    if r.exists(store.PUBLISHED):
        return None
    with sessions() as session:
        done = republish(session, r)
    reason = f"Redis came back without the published state; republished {done.summary()}"
    log.warning(reason)
    record_event(
        sessions,
        kind="registry",
        action="republish",
        outcome="done",
        reason=reason,
        details={"models": done.models, "variants": done.variants, "apps": done.apps},
    )
    return done


def _check(sessions: sessionmaker[Session], r: redis.Redis, version: VersionWriter | None) -> None:
    republish_if_lost(sessions, r)
    if version is not None:
        version.ensure()


async def present(ar: aioredis.Redis, *, versioned: bool) -> bool:
    """Whether Redis holds the publication's sentinel (and, `versioned`, a version token): one round
    trip; False too when Redis does not answer it in time (the thread's check then says why)."""
    pipe = ar.pipeline(transaction=False)
    pipe.exists(store.PUBLISHED)
    if versioned:
        pipe.exists(REGISTRY_VERSION)
    try:
        found = await asyncio.wait_for(pipe.execute(), PRESENT_TIMEOUT_S)
    except (redis.RedisError, OSError, TimeoutError):
        return False
    return all(found)


async def keep_published(
    sessions: sessionmaker[Session],
    r: redis.Redis,
    ar: aioredis.Redis,
    version: VersionWriter | None = None,
) -> None:
    """The loop: check every `CHECK_EVERY_S`, on the event loop (`present`, through `ar`, an asyncio
    client on the same Redis); with `version`, the registry version's token too
    (`infaas.data.registry_version`). What is missing is put back in a thread (`r`, the database and
    the republication are blocking)."""
    while True:
        await asyncio.sleep(CHECK_EVERY_S)
        pending = version is not None and version.pending
        if not pending and await present(ar, versioned=version is not None):
            continue
        check = asyncio.ensure_future(asyncio.to_thread(_check, sessions, r, version))
        try:
            await asyncio.shield(check)
        except asyncio.CancelledError:
            # Shutting down: let a check under way finish first, or its thread would still hold a
            # database connection when the engine is disposed.
            with contextlib.suppress(Exception):
                await check
            raise
        except Exception as exc:  # Redis or the database away: the next turn tries again
            log.warning("checking the published state failed: %s", exc)
