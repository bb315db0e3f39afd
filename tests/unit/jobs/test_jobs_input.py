"""Reading a job's input: .npy/.npz only, no pickles, shapes and dtypes against the signature."""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest

from infaas.core.errors import InvalidInput
from infaas.jobs.protocol import auto_chunk_rows, chunk_plan, npz_bytes, parse_job_input, read_npz
from infaas.wire.tensors import Signature, TensorSpec

ONE = Signature(
    inputs=(TensorSpec("x", "float32", (None, 4)),), outputs=(TensorSpec("y", "float32", (None, 2)),)
)
TWO = Signature(
    inputs=(TensorSpec("a", "float32", (None, 4)), TensorSpec("b", "int64", (None,))),
    outputs=(TensorSpec("y", "float32", (None, 2)),),
)


def npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=True)
    return buffer.getvalue()


def parse(data: bytes, signature: Signature = ONE, max_bytes: int = 1 << 20) -> dict[str, np.ndarray]:
    return parse_job_input(data, signature, max_rows=1000, max_bytes=max_bytes)


def test_npy_and_npz_inputs_are_read_and_cast() -> None:
    x = np.arange(12, dtype=np.float64).reshape(3, 4)
    assert parse(npy(x))["x"].dtype == np.float32
    assert parse(npz_bytes({"x": x}))["x"].shape == (3, 4)
    both = parse(npz_bytes({"a": x, "b": np.arange(3)}), TWO)
    assert set(both) == {"a", "b"}


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (npy(np.zeros((3, 5), np.float32)), "shape"),
        (npy(np.zeros((3,), np.float32)), "shape"),
        (npy(np.array(["a", "b"])), "float32"),
        (npy(np.array([{"pickled": 1}], dtype=object)), "corrupt or holds objects"),
        (npy(np.zeros((0, 4), np.float32)), "rows"),
        (npy(np.full((2, 4), np.nan, np.float32)), "NaN"),
        (npz_bytes({"z": np.zeros((2, 4))}), "needs ['x']"),
        (b"PK\x03\x04broken", "corrupt"),
        (b"\x93NUMPYbroken", "corrupt"),
        (b"hello", "neither"),
    ],
)
def test_bad_inputs_are_refused_with_a_reason(data: bytes, words: str) -> None:
    with pytest.raises(InvalidInput) as err:
        parse(data)
    assert words in err.value.message


def test_multi_input_models_need_an_npz_with_equal_rows() -> None:
    with pytest.raises(InvalidInput, match="send a .npz"):
        parse(npy(np.zeros((2, 4), np.float32)), TWO)
    with pytest.raises(InvalidInput, match="same number of rows"):
        parse(npz_bytes({"a": np.zeros((2, 4)), "b": np.arange(3)}), TWO)


def test_a_zip_bomb_is_refused_by_its_declared_size() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("x.npy", b"\0" * 200_000)
    with pytest.raises(InvalidInput, match="expands"):
        parse(buffer.getvalue(), max_bytes=100_000)


def test_chunk_plan_covers_every_row_once() -> None:
    plan = chunk_plan(10_001, 1000)
    assert plan[0] == (0, 1000) and plan[-1] == (10_000, 10_001) and len(plan) == 11
    assert sum(b - a for a, b in plan) == 10_001
    assert all(plan[i][1] == plan[i + 1][0] for i in range(len(plan) - 1))


def test_auto_chunk_rows_is_about_a_second_in_whole_batches() -> None:
    assert auto_chunk_rows(throughput_rows_s=5000, max_batch=64, target_s=1.0, cap=100_000) == 4992
    assert auto_chunk_rows(throughput_rows_s=10, max_batch=64, target_s=1.0, cap=100_000) == 64
    assert auto_chunk_rows(throughput_rows_s=1e9, max_batch=64, target_s=1.0, cap=100_000) == 100_000


def test_results_round_trip_without_pickle() -> None:
    out = {"y": np.arange(6, dtype=np.float32).reshape(3, 2)}
    assert np.array_equal(read_npz(npz_bytes(out))["y"], out["y"])
