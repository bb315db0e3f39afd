"""The lease a profiler holds on the model it profiles, renewed by a thread while it works.

The registry's sweeper profiles a model again when its lease has been gone for a grace period; so the
keeper re-creates a lease that Redis lost (restarted empty) at its next renewal, and gives it up only to a
newer attempt or a duplicate that holds it.
"""

from __future__ import annotations

import logging
import threading
from types import TracebackType

import redis

from infaas.clients.profiler import ProfileLease, drop_lease, take_lease

log = logging.getLogger("infaas.profiler")


class LeaseKeeper:
    """`with LeaseKeeper(...)`: renews `lease` every `renew_s` for `ttl_s`; drops it on the way out."""

    def __init__(self, r: redis.Redis, lease: ProfileLease, *, ttl_s: float, renew_s: float) -> None:
        self.redis = r
        self.lease = lease
        self.ttl_s = ttl_s
        self.renew_s = renew_s
        self.lost_to: ProfileLease | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._renew_until_stopped, name=f"lease-{lease.model_id}", daemon=True
        )

    def take(self) -> ProfileLease | None:
        """Take the lease; None if taken, else the live lease of another profiler that holds it. Redis
        unreachable counts as taken: the renewals create the key once Redis answers."""
        try:
            return take_lease(self.redis, self.lease, ttl_s=self.ttl_s)
        except redis.RedisError as exc:
            log.warning("taking the lease of model %s failed: %s", self.lease.model_id, exc)
            return None

    def __enter__(self) -> LeaseKeeper:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join()
        try:
            drop_lease(self.redis, self.lease)
        except redis.RedisError as error:  # it expires by itself
            log.warning("dropping the lease of model %s failed: %s", self.lease.model_id, error)

    def _renew_until_stopped(self) -> None:
        while not self._stop.wait(self.renew_s):
            try:
                holder = take_lease(self.redis, self.lease, ttl_s=self.ttl_s)
            except redis.RedisError as exc:  # Redis away: keep profiling, renew once it is back
                log.warning("renewing the lease of model %s failed: %s", self.lease.model_id, exc)
                continue
            if holder is not None:
                # A newer attempt took the model: the registry refuses this attempt's reports from now on.
                self.lost_to = holder
                log.warning(
                    "profiler %s lost the lease of model %s (attempt %s) to %s (attempt %s)",
                    self.lease.worker,
                    self.lease.model_id,
                    self.lease.attempt,
                    holder.worker,
                    holder.attempt,
                )
                return
