"""The prediction cache: LRU by bytes, keyed by model and exact inputs."""

from __future__ import annotations

import numpy as np

from infaas.cache import PredictionCache, input_digest


def out(n: int, fill: float = 1.0) -> dict[str, np.ndarray]:
    return {"y": np.full((1, n), fill, dtype=np.float32)}  # 4·n bytes


def test_digest_is_exact_in_values_dtype_shape_and_names() -> None:
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    assert input_digest({"x": x}) == input_digest({"x": x.copy()})
    assert input_digest({"x": x}) != input_digest({"x": x + 1e-6})
    assert input_digest({"x": x}) != input_digest({"x": x.astype(np.float64)})
    assert input_digest({"x": x}) != input_digest({"x": x.reshape(4, 2)})
    assert input_digest({"x": x}) != input_digest({"z": x})


def test_hits_misses_and_lru_eviction_by_bytes() -> None:
    cache = PredictionCache(max_bytes=100)
    cache.put("a", out(10))  # 40 bytes
    cache.put("b", out(10))
    assert cache.get("a") is not None  # a is now the most recent
    cache.put("c", out(10))  # 120 > 100: evicts the least recently used, b
    assert cache.get("b") is None and cache.get("a") is not None and cache.get("c") is not None
    assert cache.bytes == 80 and len(cache) == 2
    assert (cache.hits, cache.misses) == (3, 1)


def test_entries_larger_than_the_cache_are_not_kept_and_values_are_copies() -> None:
    cache = PredictionCache(max_bytes=16)
    cache.put("big", out(10))
    assert cache.get("big") is None and cache.bytes == 0
    small = out(2)
    cache.put("s", small)
    small["y"][0, 0] = 42  # the caller reusing its buffer must not change the cached answer
    hit = cache.get("s")
    assert hit is not None and hit.outputs["y"][0, 0] == 1.0
    cache.put("s", out(2, fill=3.0))  # replacing keeps the byte count right
    assert cache.bytes == 8


def test_an_entry_remembers_the_variant_that_computed_it() -> None:
    cache = PredictionCache(max_bytes=1024)
    cache.put("m:d", out(2), variant="m.int8")
    hit = cache.get("m:d")
    assert hit is not None and hit.variant == "m.int8"
    cache.put("m:d", out(2), variant="m.fp32")  # recomputed by another variant: the entry says so
    hit = cache.get("m:d")
    assert hit is not None and hit.variant == "m.fp32" and len(cache) == 1
