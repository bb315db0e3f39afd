"""The prediction cache: LRU by bytes, keyed by model and exact inputs."""

from __future__ import annotations

import gc

import numpy as np

from infaas.wire.frames import encode_frame
from services.scheduler.prediction_cache import ENTRY_OVERHEAD, PredictionCache, input_digest


def out(n: int, fill: float = 1.0) -> dict[str, np.ndarray]:
    return {"y": np.full((1, n), fill, dtype=np.float32)}  # 4·n bytes


def test_digest_is_exact_in_values_dtype_shape_and_names() -> None:
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    assert input_digest({"x": x}) == input_digest({"x": x.copy()})
    assert input_digest({"x": x}) != input_digest({"x": x + 1e-6})
    assert input_digest({"x": x}) != input_digest({"x": x.astype(np.float64)})
    assert input_digest({"x": x}) != input_digest({"x": x.reshape(4, 2)})
    assert input_digest({"x": x}) != input_digest({"z": x})


def test_digest_of_views_and_several_inputs() -> None:
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    strided = base[:, ::2]
    assert input_digest({"x": strided}) == input_digest({"x": np.ascontiguousarray(strided)})
    a, b = np.zeros((1, 2), np.float32), np.ones((1, 2), np.float32)
    assert input_digest({"a": a, "b": b}) == input_digest({"b": b, "a": a})  # the order sent says nothing
    assert input_digest({"a": a, "b": b}) != input_digest({"a": b, "b": a})
    # a name holding the separator of a naive "name|dtype|shape" key cannot pass for another input
    assert input_digest({"x|<f4|(1, 2)|": a}) != input_digest({"x": a})


def size(key: str, n: int) -> int:
    """What an entry of `out(n)` costs against the bound."""
    return PredictionCache.entry_bytes(key, encode_frame({}, out(n)))


def test_hits_misses_and_lru_eviction_by_bytes() -> None:
    cache = PredictionCache(max_bytes=2 * size("a", 10) + 10)
    cache.put("a", out(10))
    cache.put("b", out(10))
    assert cache.get("a") is not None  # a is now the most recent
    cache.put("c", out(10))  # three entries do not fit: evicts the least recently used, b
    assert cache.get("b") is None and cache.get("a") is not None and cache.get("c") is not None
    assert cache.bytes == 2 * size("a", 10) and len(cache) == 2
    assert (cache.hits, cache.misses) == (3, 1)


def test_the_bound_counts_each_entrys_overhead_not_only_its_arrays() -> None:
    # A one-row answer of 10 floats is 40 bytes of array; an entry costs several hundred.
    assert size("m:" + "0" * 32, 10) > 40 + ENTRY_OVERHEAD
    cache = PredictionCache(max_bytes=100 * size("k000", 10))
    for i in range(1000):
        cache.put(f"k{i:03d}", out(10))
    assert len(cache) == 100 and cache.bytes <= cache.max_bytes


def test_entries_larger_than_the_cache_are_not_kept_and_values_are_copies() -> None:
    cache = PredictionCache(max_bytes=size("s", 2) + 4)
    cache.put("big", out(10))
    assert cache.get("big") is None and cache.bytes == 0
    small = out(2)
    cache.put("s", small)
    small["y"][0, 0] = 42  # the caller reusing its buffer must not change the cached answer
    hit = cache.get("s")
    assert hit is not None and hit.outputs["y"][0, 0] == 1.0 and hit.outputs["y"].shape == (1, 2)
    cache.put("s", out(2, fill=3.0))  # replacing keeps the byte count right
    assert cache.bytes == size("s", 2)
    hit = cache.get("s")
    assert hit is not None and float(hit.outputs["y"][0, 1]) == 3.0


def test_entries_give_the_garbage_collector_nothing_to_scan() -> None:
    cache = PredictionCache(max_bytes=1 << 20)
    cache.put("k", out(4), variant="v")
    gc.collect()  # untracks tuples that hold only untracked objects
    assert not gc.is_tracked(cache._data["k"])


def test_an_entry_remembers_the_variant_that_computed_it() -> None:
    cache = PredictionCache(max_bytes=4096)
    cache.put("m:d", out(2), variant="m.int8")
    hit = cache.get("m:d")
    assert hit is not None and hit.variant == "m.int8"
    cache.put("m:d", out(2), variant="m.fp32")  # recomputed by another variant: the entry says so
    hit = cache.get("m:d")
    assert hit is not None and hit.variant == "m.fp32" and len(cache) == 1
