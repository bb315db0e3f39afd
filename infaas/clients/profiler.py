"""Celery wiring shared by the task producers (registry) and the profiler workers, and the profile lease
both sides read.

Producers send tasks by name, so the registry never imports the profiler service.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import orjson
import redis
from celery import Celery

from infaas.data.broker import celery_settings

PROFILE_MODEL = "infaas.profile_model"
PROFILE_VARIANTS = "infaas.profile_variants"
TRAIN_PARITY = "infaas.train_parity"
PROFILER_TTL_S = 15.0
"""A profiler worker not heard from for this long no longer counts as having its hardware."""

VISIBILITY_TIMEOUT_S = 3600
"""When the broker hands an unacknowledged task to another worker. Not the recovery path: the registry's
lease sweeper re-enqueues a dead profiler's model within seconds as a new attempt, and the message
redelivered later carries the old attempt and is dropped. Kept long because a shorter one would redeliver
every profile that runs longer than it to a second profiler while the first still works on it."""

LEASE_PREFIX = "infaas:profile:lease:"


def profile_queue(hardware: str) -> str:
    """One queue per hardware kind: a worker consumes only the queues of hardware it has."""
    return f"profile.{hardware}"


def make_celery(broker_url: str) -> Celery:
    app = Celery("infaas", broker=broker_url)
    app.conf.update(**celery_settings(visibility_timeout_s=VISIBILITY_TIMEOUT_S))
    return app


@dataclass(frozen=True)
class ProfileLease:
    """Profiler `worker` works on `attempt` of a model on `hardware`, since `since` (unix s)."""

    model_id: int
    hardware: str
    worker: str
    attempt: int
    since: float


def lease_key(model_id: int, hardware: str) -> str:
    """`infaas:profile:lease:{model_id}:{hardware}`: one per hardware kind, as each kind has its profiler."""
    return f"{LEASE_PREFIX}{model_id}:{hardware}"


# Take or renew: the key is ours when absent (never taken, expired, or lost with Redis), already ours, or
# held for an older attempt (which is over). A live lease of the same or a newer attempt held by another
# worker wins, and comes back.
_TAKE = """
local current = redis.call('GET', KEYS[1])
if current then
  local held = cjson.decode(current)
  if held['worker'] ~= ARGV[1] and tonumber(held['attempt']) >= tonumber(ARGV[2]) then
    return current
  end
end
redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[4])
return false
"""

_DROP = """
local current = redis.call('GET', KEYS[1])
if current then
  local held = cjson.decode(current)
  if held['worker'] == ARGV[1] and tonumber(held['attempt']) == tonumber(ARGV[2]) then
    return redis.call('DEL', KEYS[1])
  end
end
return 0
"""


def take_lease(r: redis.Redis, lease: ProfileLease, *, ttl_s: float) -> ProfileLease | None:
    """Take or renew `lease` for `ttl_s`; None if it is ours now, else the live lease that holds it."""
    key = lease_key(lease.model_id, lease.hardware)
    held = r.eval(
        _TAKE, 1, key, lease.worker, lease.attempt, orjson.dumps(asdict(lease)), max(1, int(ttl_s * 1000))
    )
    return _parse(held) if held else None


def drop_lease(r: redis.Redis, lease: ProfileLease) -> bool:
    """Delete the lease if it is still this one's (a newer attempt's lease is left alone)."""
    key = lease_key(lease.model_id, lease.hardware)
    return bool(r.eval(_DROP, 1, key, lease.worker, lease.attempt))


def live_leases(r: redis.Redis) -> list[ProfileLease]:
    """Every live profile lease (few: one per profiler at work)."""
    keys = list(r.scan_iter(match=f"{LEASE_PREFIX}*", count=500))
    if not keys:
        return []
    return [_parse(v) for v in r.mget(keys) if v is not None]


def leases_of(r: redis.Redis, model_id: int, kinds: tuple[str, ...]) -> list[ProfileLease]:
    """The live leases of one model, on each of `kinds`."""
    values = r.mget([lease_key(model_id, kind) for kind in kinds])
    return [_parse(v) for v in values if v is not None]


def _parse(raw: bytes | str) -> ProfileLease:
    return ProfileLease(**orjson.loads(raw))
