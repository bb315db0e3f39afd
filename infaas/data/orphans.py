"""Stream entries a failed consumer left pending, handed on exactly once.

A variant's stream is read by the consumer group `store.STREAM_GROUP`, one consumer per worker (named by
the worker id). An entry delivered to a worker that then died stays in the group's pending list under its
name. Two parties may take it, and each does so in one Lua script, so whichever runs first gets every
entry and the other none (Redis runs a script atomically):

- `claim_orphans`: a surviving worker with an instance of the same variant claims the dead consumer's
  entries to serve them (XPENDING for that consumer, then XCLAIM; XAUTOCLAIM would also take a live
  consumer's entries that merely waited long, since it selects by idle time, not by consumer).
- `take_back`: when no worker serves the variant any more, the scheduler that sent an entry deletes it
  (pending on the dead consumer, or never delivered) and sends the query elsewhere.
"""

from __future__ import annotations

from typing import Any

import redis.asyncio as aioredis

from infaas.data import store

MAX_CLAIM = 1000  # entries claimed per call: a variant's queue is bounded well below this (queue_limit_s)

_CLAIM = """
local pending = redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', tonumber(ARGV[4]), ARGV[2])
if #pending == 0 then return {} end
local ids = {}
for i, p in ipairs(pending) do ids[i] = p[1] end
return redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[3], 0, unpack(ids))
"""

_TAKE_BACK = """
local taken = {}
for i = 3, #ARGV do
  local id = ARGV[i]
  local p = redis.call('XPENDING', KEYS[1], ARGV[1], id, id, 1)
  local mine = #p == 0 and #redis.call('XRANGE', KEYS[1], id, id) == 1 or (#p == 1 and p[1][2] == ARGV[2])
  if mine then
    redis.call('XACK', KEYS[1], ARGV[1], id)
    redis.call('XDEL', KEYS[1], id)
    taken[#taken + 1] = id
  end
end
return taken
"""


async def claim_orphans(
    redis: aioredis.Redis, variant: str, *, dead: str, claimer: str
) -> list[tuple[bytes, dict[bytes, bytes]]]:
    """Claim for `claimer` the entries of `variant`'s stream pending on the consumer `dead`; returns
    them as XREADGROUP does (id, fields). Another claimer running at the same time gets none of them."""
    key = store.stream_key(variant)
    reply: Any = await redis.eval(_CLAIM, 1, key, store.STREAM_GROUP, dead, claimer, MAX_CLAIM)
    out: list[tuple[bytes, dict[bytes, bytes]]] = []
    for entry in reply or ():
        if not entry:  # deleted meanwhile: XCLAIM answers nil for it
            continue
        entry_id, flat = entry
        out.append((entry_id, dict(zip(flat[0::2], flat[1::2], strict=True))))
    return out


async def take_back(redis: aioredis.Redis, variant: str, *, dead: str, entry_ids: list[bytes]) -> set[bytes]:
    """Delete those of `entry_ids` that are pending on `dead` or were never delivered; returns the ids
    taken back (the caller sends those queries elsewhere). One claimed by a live consumer, or answered
    already, is left alone."""
    if not entry_ids:
        return set()
    reply: Any = await redis.eval(
        _TAKE_BACK, 1, store.stream_key(variant), store.STREAM_GROUP, dead, *entry_ids
    )
    return {bytes(i) for i in reply or ()}
