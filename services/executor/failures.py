"""What a worker does when another worker is declared failed (`infaas.data.failures`): for each variant
it serves that the failed one served too, it claims the queries the failed consumer left pending on the
variant's stream and serves them (`infaas.data.orphans`: exactly one survivor gets each)."""

from __future__ import annotations

import logging

from infaas.data.failures import FAILURES_CHANNEL, FailureNotice
from infaas.data.orphans import claim_orphans
from infaas.data.subscription import keep_subscribed
from services.executor import metrics
from services.executor.consumers import serve_entries
from services.executor.instances import InstanceHost

log = logging.getLogger("infaas.executor")


async def claim_for(host: InstanceHost, notice: FailureNotice) -> int:
    """Claim and serve what `notice.worker` left pending on the streams of variants both served;
    returns how many entries this worker took."""
    if notice.worker == host.worker_id:
        return 0  # a false alarm about this very worker: its own consumers still hold its entries
    taken = 0
    for vid, instance in list(host.instances.items()):
        if instance.draining or instance.state in ("loading", "failed"):
            continue
        if notice.instances and vid not in notice.instances:
            continue
        entries = await claim_orphans(host.redis, vid, dead=notice.worker, claimer=host.worker_id)
        if not entries:
            continue
        taken += len(entries)
        metrics.ORPHANS_CLAIMED.labels(vid).inc(len(entries))
        log.warning(
            "claimed %d queries of %s that failed worker %s left pending", len(entries), vid, notice.worker
        )
        await serve_entries(host, instance, entries)
    return taken


async def listen_failures(host: InstanceHost) -> None:
    """Act on every failure notice for as long as the worker runs; resubscribes after a Redis loss."""

    async def on_notice(_channel: bytes, data: bytes) -> None:
        if (notice := FailureNotice.parse(data)) is None:
            log.warning("ignoring a malformed failure notice")
            return
        await _claim_logged(host, notice)  # rare, and short: one batch per variant

    await keep_subscribed(host.redis, [FAILURES_CHANNEL], on_notice, what="failure-notice", retry_s=0.5)


async def _claim_logged(host: InstanceHost, notice: FailureNotice) -> None:
    try:
        await claim_for(host, notice)
    except Exception:
        log.exception("claiming what %s left pending failed", notice.worker)
