"""The prediction cache: LRU over (model, input digest) with a bound on memory (Clipper §3).

Each entry remembers which variant computed it, and from which artifact: variants of one model differ
in accuracy, so the scheduler answers from the cache only when that variant meets the query, and names
it; and only while that variant id still stands for the same artifact (a model deleted and registered
again under its name reuses its variant ids).

An entry is one immutable `bytes` wire frame of the outputs (plus the variant's id and digest),
decoded on a hit. Two reasons: the bound counts what an entry really costs (the frame, the key and a
fixed per-entry overhead — counting only the arrays' bytes let a "64 MiB" cache of small answers grow to
gigabytes), and the garbage collector has nothing to scan in it (a tuple of a bytes and two strs is
untracked), where a dict of arrays per entry made every full collection walk the whole cache, stalling
the gateway when the cache was large.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np
import orjson

from infaas.policy.selection import Decision, Requirements, accurate_enough
from infaas.schemas.variants import VariantProfile
from infaas.wire.frames import decode_frame, encode_frame

ENTRY_OVERHEAD = 256
"""Bytes charged per entry beyond its frame and key: the ordered dict's slot, the tuple, the objects'
headers (measured with tracemalloc: slightly more than a one-row answer's real overhead)."""


class CachedAnswer(NamedTuple):
    outputs: dict[str, np.ndarray]
    """Read-only views over the cached frame."""
    variant: str
    """The variant that computed the outputs."""
    digest: str
    """The artifact it ran: a model deleted and registered again under its name reuses its variant
    ids, and its old answers must not pass for the new model's."""


def input_digest(inputs: Mapping[str, np.ndarray]) -> str:
    """Digest of a query's inputs: names, dtypes, shapes and bytes (equal digests, equal inputs)."""
    h = hashlib.blake2b(digest_size=16)
    for name in sorted(inputs) if len(inputs) > 1 else inputs:
        a = inputs[name]
        h.update(orjson.dumps((name, a.dtype.str, a.shape)))  # a JSON array: no name can pass for another
        try:
            h.update(a.data)  # its own bytes: a query's inputs are C-contiguous (no copy, no NumPy call)
        except BufferError:  # a strided view
            h.update(np.ascontiguousarray(a).data)
    return h.hexdigest()


class PredictionCache:
    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self.hits = 0
        self.misses = 0
        self._data: OrderedDict[str, tuple[bytes, str, str]] = OrderedDict()

    @staticmethod
    def key(model: str, digest: str) -> str:
        return f"{model}:{digest}"

    @staticmethod
    def entry_bytes(key: str, frame: bytes) -> int:
        return len(frame) + len(key) + ENTRY_OVERHEAD

    def get(self, key: str) -> CachedAnswer | None:
        found = self._data.get(key)
        if found is None:
            self.misses += 1
            return None
        self._data.move_to_end(key)
        self.hits += 1
        _, outputs = decode_frame(found[0])
        return CachedAnswer(outputs, found[1], found[2])

    def put(self, key: str, outputs: Mapping[str, np.ndarray], variant: str = "", digest: str = "") -> None:
        frame = encode_frame({}, outputs)  # a copy: the arrays may be views over a reused buffer
        size = self.entry_bytes(key, frame)
        if size > self.max_bytes:
            return  # larger than the whole cache: caching it would only evict everything else
        old = self._data.pop(key, None)
        if old is not None:
            self.bytes -= self.entry_bytes(key, old[0])
        self._data[key] = (frame, variant, digest)
        self.bytes += size
        while self.bytes > self.max_bytes and self._data:
            evicted_key, evicted = self._data.popitem(last=False)
            self.bytes -= self.entry_bytes(evicted_key, evicted[0])

    def __len__(self) -> int:
        return len(self._data)


def usable(
    hit: CachedAnswer | None,
    variants: Mapping[str, VariantProfile],
    req: Requirements,
    rows: int,
    pinned: str | None,
) -> tuple[Decision, dict[str, np.ndarray]] | None:
    """A cached answer counts only if the variant that computed it (one of `variants`, the snapshot's)
    meets this query's accuracy (its model's reference floor included) and cost (another variant of
    the model may have been chosen since), and is the very variant a pinned query names (its caller
    asked for that variant's own answer); the answer then names it."""
    if hit is None or (pinned is not None and hit.variant != pinned):
        return None
    computed_by = variants.get(hit.variant)
    if computed_by is None or computed_by.artifact_digest != hit.digest:
        return None  # gone, or its model registered again since: another artifact under its id
    if not accurate_enough(computed_by, req):
        return None
    if req.max_cost is not None and computed_by.cost_per_query * rows > req.max_cost:
        return None
    return Decision(computed_by, "active", None, "answered from the prediction cache"), hit.outputs
