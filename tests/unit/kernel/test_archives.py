"""Bounding a .npz before it is decompressed: declared sizes and the expansion ratio."""

from __future__ import annotations

import io

import numpy as np
import pytest

from infaas.core.errors import InvalidInput
from infaas.wire.archives import MAX_MEMBERS, RATIO_FREE_BYTES, check_npz_bounds


def npz(compressed: bool = False, /, **arrays: np.ndarray) -> bytes:
    buf = io.BytesIO()
    if compressed:
        np.savez_compressed(buf, allow_pickle=False, **arrays)
    else:
        np.savez(buf, allow_pickle=False, **arrays)
    return buf.getvalue()


def test_an_ordinary_set_passes_and_its_expanded_size_is_returned() -> None:
    rng = np.random.default_rng(0)
    data = npz(True, x=rng.random((500, 20), dtype=np.float32), y=rng.integers(0, 10, 500))
    assert check_npz_bounds(data, max_expanded_bytes=1 << 20) > 500 * 20 * 4


def test_beyond_the_declared_size_limit_is_refused_without_decompressing() -> None:
    data = npz(x=np.ones((1000, 100), np.float32))
    with pytest.raises(InvalidInput, match="expands to") as info:
        check_npz_bounds(data, max_expanded_bytes=100_000)
    assert info.value.details["limit"] == 100_000


def test_a_bomb_is_refused_by_its_ratio_even_under_the_size_limit() -> None:
    rows = RATIO_FREE_BYTES // (64 * 4) + 1000
    data = npz(True, x=np.zeros((rows, 64), np.float32))
    assert len(data) < RATIO_FREE_BYTES // 100
    with pytest.raises(InvalidInput, match="times its size"):
        check_npz_bounds(data, max_expanded_bytes=1 << 30)


def test_small_sets_may_compress_any_amount() -> None:
    data = npz(True, y=np.zeros(100_000, np.int64))  # 800 KB of zeros: a thousandfold, but small
    assert check_npz_bounds(data, max_expanded_bytes=1 << 30) == pytest.approx(800_000, rel=0.01)


def test_too_many_members_and_non_zips() -> None:
    many = npz(False, **{f"a{i}": np.zeros(1) for i in range(MAX_MEMBERS + 1)})
    with pytest.raises(InvalidInput, match="arrays"):
        check_npz_bounds(many, max_expanded_bytes=1 << 30)
    assert check_npz_bounds(b"not a zip", max_expanded_bytes=10) == 0  # left for the reader to refuse
