"""The prediction cache: LRU over (model, input digest) with a bound on memory (Clipper §3).

Each entry remembers which variant computed it: variants of one model differ in accuracy, so the
scheduler answers from the cache only when that variant meets the query, and names it.

Outputs are kept as NumPy arrays; the bound counts their bytes, so a few large answers cannot
crowd out the memory budget unnoticed.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np


class CachedAnswer(NamedTuple):
    outputs: dict[str, np.ndarray]
    variant: str
    """The variant that computed the outputs."""


def input_digest(inputs: Mapping[str, np.ndarray]) -> str:
    """Digest of a query's inputs: names, dtypes, shapes and bytes (equal digests, equal inputs)."""
    h = hashlib.blake2b(digest_size=16)
    for name in sorted(inputs):
        a = np.ascontiguousarray(inputs[name])
        h.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.data)
    return h.hexdigest()


class PredictionCache:
    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self.hits = 0
        self.misses = 0
        self._data: OrderedDict[str, CachedAnswer] = OrderedDict()

    @staticmethod
    def key(model: str, digest: str) -> str:
        return f"{model}:{digest}"

    def get(self, key: str) -> CachedAnswer | None:
        found = self._data.get(key)
        if found is None:
            self.misses += 1
            return None
        self._data.move_to_end(key)
        self.hits += 1
        return found

    def put(self, key: str, outputs: Mapping[str, np.ndarray], *, variant: str = "") -> None:
        size = sum(a.nbytes for a in outputs.values())
        if size > self.max_bytes:
            return  # larger than the whole cache: caching it would only evict everything else
        old = self._data.pop(key, None)
        if old is not None:
            self.bytes -= sum(a.nbytes for a in old.outputs.values())
        # Own copies: the arrays may be views over a network buffer that is about to be reused.
        self._data[key] = CachedAnswer({n: np.array(a, copy=True) for n, a in outputs.items()}, variant)
        self.bytes += size
        while self.bytes > self.max_bytes and self._data:
            _, evicted = self._data.popitem(last=False)
            self.bytes -= sum(a.nbytes for a in evicted.outputs.values())

    def __len__(self) -> int:
        return len(self._data)
