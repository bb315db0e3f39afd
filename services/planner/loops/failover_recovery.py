"""One progressive failover carried out (FailLite's Algorithm 1, planned by `policies/failover.py`):
the smallest variant loaded first where the plan says so, then the chosen one; answers from a variant
other than the failed one marked as a fallback's (`failover_marks`); and once the chosen one is active,
the less accurate stopgaps loaded meanwhile drained. The failover loop (`loops/failover.py`) starts one
per app to recover, each step an event."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import redis.asyncio as aioredis

from infaas.clients.executor import ExecutorClient
from infaas.data import failover_marks
from services.planner.loops.failover_backups import View
from services.planner.policies.failover import Recovery

Event = Callable[..., Awaitable[None]]
"""The loop's `_event(action, outcome, reason, app, variant, worker)`."""


async def recover(
    recovery: Recovery,
    failed: str,
    view: View,
    why: str,
    *,
    redis: aioredis.Redis,
    executors: ExecutorClient,
    event: Event,
    read_view: Callable[[], Awaitable[View]],
) -> None:
    """Carry out `recovery` of the app whose variant `failed` was lost, planned over `view`; a step
    that fails ends it with a `failed` event."""
    urls = {w.id: w.url for w in view.workers}
    vid, worker = recovery.target
    try:
        if recovery.first is not None:
            small, at = recovery.first
            await executors.load(urls[at], small)
            if small != failed:
                reason = f"{why}: {small}, the smallest variant, loaded first for the lowest MTTR"
                await failover_marks.mark(
                    redis, small, failed=failed, app=recovery.app, reason=reason, since=view.now
                )
            await event("first_loaded", "done", reason_first(small, vid), recovery.app, small, at)
        await executors.load(urls[worker], vid)
        if vid != failed:
            reason = f"{why}: {recovery.reason}"
            await failover_marks.mark(
                redis, vid, failed=failed, app=recovery.app, reason=reason, since=view.now
            )
        gaps = stopgaps(recovery, view, await read_view())
        for small, at in gaps:
            await executors.drain_instance(urls[at], small)
            await failover_marks.unmark(redis, small)
        gone = ", ".join(f"{v} on {w}" for v, w in gaps) or "none"
        reason = f"{vid} active on {worker}; less accurate stopgaps drained: {gone}"
        await event("upgraded", "done", reason, recovery.app, vid, worker)
    except Exception as exc:
        await event("progressive_failover", "failed", f"{why}: {exc}", recovery.app, vid, worker)


def stopgaps(recovery: Recovery, before: View, now: View) -> list[tuple[str, str]]:
    """Instances of the app's less accurate variants loaded since the failure (in `now`, not in
    `before`) — the small variant loaded first, and any that a scheduler cold-loaded for a query
    meanwhile (selection loads the quickest to load) — which the chosen variant replaces: selection
    would otherwise keep preferring the faster, smaller one."""
    target = now.variants.get(recovery.target[0])
    if target is None:
        return []
    existed = {(i.variant_id, i.worker_id) for i in before.instances}
    return sorted(
        (i.variant_id, i.worker_id)
        for i in now.instances
        if (v := now.variants.get(i.variant_id)) is not None
        and (v.app, v.signature_key, v.task) == (target.app, target.signature_key, target.task)
        and v.accuracy < target.accuracy
        and (i.variant_id, i.worker_id) not in existed
        and i.worker_id in {w.id for w in before.workers}
    )


def reason_first(small: str, target: str) -> str:
    return f"{small} active: the app answers again while {target} loads"
