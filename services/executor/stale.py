"""Instances whose variant no longer stands for what they run: unloaded at the next heartbeat.

A deleted model's variants leave the store (`store.remove_variants`), but its instances stayed loaded
on every executor, holding memory, and a model registered again under the same name reuses its variant
ids: its queries went to the old weights. Orders carry the artifact they mean (`Order.digest`;
`serving.other_artifact` refuses the others) and a load replaces an instance of another
artifact; this sweep is what frees the memory and keeps every reader of the heartbeats right.

Each heartbeat reads the published profile of every loaded variant (one round trip). An instance is
stale when:
- its variant's profile is published with another artifact (its model was registered again), or
- its variant is not published in `MISSING_CHECKS` reads in a row (its model was deleted, or its
  parity model withdrawn) while the registry's publication stands. When Redis has come back without it,
  absence says nothing, and nothing is unloaded until the registry has published again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import orjson
import redis.asyncio as aioredis

from infaas.data import store

MISSING_CHECKS = 2
"""Reads in a row that must miss a variant before its instance goes: a read racing a republication
would otherwise unload a live model's instance."""


def judge(
    published: bool,
    stored: Mapping[str, bytes | None],
    loaded: Mapping[str, str],
    missing: Mapping[str, int],
) -> tuple[list[tuple[str, str]], dict[str, int]]:
    """Which loaded instances are stale, with why, and the missing counts to pass next time (pure).
    `stored`: each loaded variant's published profile (JSON) or None; `loaded`: variant -> the artifact
    digest its instance runs; `missing`: what the previous call returned."""
    if not published:
        return [], dict(missing)
    stale: list[tuple[str, str]] = []
    counts: dict[str, int] = {}
    for vid, digest in loaded.items():
        blob = stored.get(vid)
        if blob is None:
            counts[vid] = missing.get(vid, 0) + 1
            if counts[vid] >= MISSING_CHECKS:
                stale.append((vid, "its variant is no longer published: its model was deleted"))
            continue
        try:
            now = orjson.loads(blob).get("artifact_digest")
        except orjson.JSONDecodeError:
            continue  # not ours to judge: a profile we cannot read is not a reason to unload
        if isinstance(now, str) and now != digest:
            stale.append((vid, "its model was registered again: the variant now stands for another artifact"))
    return stale, counts


@dataclass
class StaleSweep:
    missing: dict[str, int] = field(default_factory=dict)

    async def __call__(self, redis: aioredis.Redis, loaded: Mapping[str, str]) -> list[tuple[str, str]]:
        """The stale instances among `loaded` (variant -> artifact digest), with why."""
        if not loaded:
            self.missing = {}
            return []
        vids = list(loaded)
        pipe = redis.pipeline(transaction=False)
        pipe.exists(store.PUBLISHED)
        pipe.mget([store.variant_key(v) for v in vids])
        published, blobs = await pipe.execute()
        stored = dict(zip(vids, blobs, strict=True))
        stale, self.missing = judge(bool(published), stored, loaded, self.missing)
        return stale
