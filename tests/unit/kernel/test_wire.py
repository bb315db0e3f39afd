"""Binary tensor frames: round trips and the refusal of malformed frames."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import orjson
import pytest

from infaas.core.errors import BadRequest
from infaas.wire.frames import decode_frame, encode_frame


def raw_frame(header: Any, body: bytes = b"", *, header_bytes: bytes | None = None) -> bytes:
    head = orjson.dumps(header) if header_bytes is None else header_bytes
    return struct.pack(">I", len(head)) + head + body


ARRAYS = [
    np.arange(12, dtype=np.float32).reshape(3, 4) / 7,
    np.array([1.5, -2.25], dtype=np.float64),
    np.array([[0.5, 65504.0]], dtype=np.float16),
    np.array([[-128, 127]], dtype=np.int8),
    np.array([[-300, 300]], dtype=np.int16),
    np.array([-(2**31), 2**31 - 1], dtype=np.int32),
    np.array([[-(2**63), 2**63 - 1]], dtype=np.int64),
    np.arange(8, dtype=np.uint8).reshape(2, 2, 2),
    np.array([True, False, True]),
    np.zeros((0, 5), dtype=np.float32),  # a 0-row batch
]


@pytest.mark.parametrize("array", ARRAYS, ids=lambda a: f"{a.dtype.name}{list(a.shape)}")
def test_round_trip_keeps_dtype_shape_and_values(array: np.ndarray) -> None:
    header, tensors = decode_frame(encode_frame({"id": "q1"}, {"t": array}))
    assert header == {"id": "q1"}
    out = tensors["t"]
    assert out.dtype == array.dtype
    assert out.shape == array.shape
    np.testing.assert_array_equal(out, array)


def test_several_tensors_keep_their_names_and_order() -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.array([[True], [False]])
    c = np.array([7, 8], dtype=np.int64)
    header, tensors = decode_frame(encode_frame({"n": 1, "nested": {"k": [1, 2]}}, {"a": a, "b": b, "c": c}))
    assert header == {"n": 1, "nested": {"k": [1, 2]}}
    assert list(tensors) == ["a", "b", "c"]
    np.testing.assert_array_equal(tensors["a"], a)
    np.testing.assert_array_equal(tensors["b"], b)
    np.testing.assert_array_equal(tensors["c"], c)


def test_non_contiguous_arrays_are_packed_by_value() -> None:
    base = np.arange(20, dtype=np.int32).reshape(4, 5)
    view = base.T[::2]  # (3, 4), neither C- nor F-contiguous
    _, tensors = decode_frame(encode_frame({}, {"v": view}))
    np.testing.assert_array_equal(tensors["v"], view)


def test_frame_layout_is_length_header_then_raw_bytes() -> None:
    array = np.array([1, 2], dtype=np.int32)
    frame = encode_frame({"id": "x"}, {"a": array})
    (head_len,) = struct.unpack_from(">I", frame, 0)
    head = orjson.loads(frame[4 : 4 + head_len])
    assert head == {"id": "x", "tensors": [{"name": "a", "dtype": "int32", "shape": [2]}]}
    assert frame[4 + head_len :] == array.tobytes()


def test_decoded_arrays_are_read_only() -> None:
    _, tensors = decode_frame(encode_frame({}, {"a": np.ones((2, 2), dtype=np.float32)}))
    assert not tensors["a"].flags.writeable


def test_frame_without_tensors() -> None:
    assert decode_frame(encode_frame({"id": "q"}, {})) == ({"id": "q"}, {})


def test_big_endian_arrays_round_trip_by_value() -> None:
    array = np.array([1.0, 2.0, 3.0], dtype=">f4")
    _, tensors = decode_frame(encode_frame({}, {"a": array}))
    np.testing.assert_array_equal(tensors["a"], [1.0, 2.0, 3.0])


def test_decoded_arrays_encode_again_byte_for_byte() -> None:
    """What the executor does with a query's inputs and the gateway with an answer's outputs: arrays
    decoded from a frame (views over its bytes) go into the next frame unchanged."""
    frame = encode_frame(
        {"id": "q"}, {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.ones(2, bool)}
    )
    _, tensors = decode_frame(frame)
    assert encode_frame({"id": "q"}, tensors) == frame


def test_strided_and_sliced_views_are_packed_by_value() -> None:
    base = np.arange(24, dtype=np.float64).reshape(4, 6)
    for view in (base[:, ::2], base[1:3], base[::-1], base.T):
        _, tensors = decode_frame(encode_frame({}, {"v": view}))
        np.testing.assert_array_equal(tensors["v"], view)
        assert tensors["v"].dtype == np.float64


def test_unserved_dtypes_keep_their_name_in_the_header() -> None:
    """An array of a dtype outside the wire's set is still framed under its NumPy name (the receiver
    refuses it with a clear error, as before)."""
    frame = encode_frame({}, {"c": np.zeros(2, dtype=np.complex64)})
    (head_len,) = struct.unpack_from(">I", frame, 0)
    assert orjson.loads(frame[4 : 4 + head_len])["tensors"][0]["dtype"] == "complex64"
    with pytest.raises(BadRequest, match="dtype"):
        decode_frame(frame)


def test_header_passed_in_is_left_as_it_was() -> None:
    header = {"id": "q"}
    encode_frame(header, {"a": np.zeros(1, np.float32)})
    assert header == {"id": "q"}


# --- malformed frames ---------------------------------------------------------------------------------


def _valid() -> bytes:
    return encode_frame({"id": "q"}, {"a": np.arange(4, dtype=np.float32)})


@pytest.mark.parametrize(
    ("frame", "fragment"),
    [
        (b"", "truncated frame"),
        (b"\x00\x00", "truncated frame"),
        (struct.pack(">I", 100) + b"{}", "truncated frame header"),
        (raw_frame(None, header_bytes=b"{not json"), "not JSON"),
        (raw_frame([1, 2]), "must be an object"),
        (raw_frame({"tensors": [{"name": "a", "dtype": "object", "shape": [1]}]}, b"\x00" * 8), "dtype"),
        (raw_frame({"tensors": [{"name": "a", "dtype": "complex64", "shape": [1]}]}, b"\x00" * 8), "dtype"),
        (raw_frame({"tensors": [{"name": "a", "dtype": "float32", "shape": [-1]}]}, b"\x00" * 4), "negative"),
        (_valid() + b"\x00", "trailing bytes"),
        (_valid()[:-1], "shorter than its tensors"),
        (
            raw_frame({"tensors": [{"name": "a", "dtype": "float64", "shape": [2, 2]}]}, b"\x00" * 16),
            "shorter",
        ),
    ],
    ids=[
        "empty",
        "short-length",
        "header-past-end",
        "bad-json",
        "header-list",
        "object-dtype",
        "complex-dtype",
        "negative-dim",
        "trailing",
        "cut-tensor",
        "too-few-bytes",
    ],
)
def test_malformed_frames_are_bad_request(frame: bytes, fragment: str) -> None:
    with pytest.raises(BadRequest, match=fragment) as info:
        decode_frame(frame)
    assert info.value.status == 400


@pytest.mark.parametrize(
    "header",
    [
        {"tensors": [{"name": "a", "dtype": "float32"}]},  # no shape
        {"tensors": [{"dtype": "float32", "shape": [1]}]},  # no name
        {"tensors": [{"name": "a", "dtype": "float32", "shape": ["x"]}]},  # shape not integers
        {"tensors": [{"name": "a", "dtype": "float32", "shape": 4}]},  # shape not a list
        {"tensors": ["a"]},  # spec not an object
        {"tensors": 5},  # tensors not a list
        {"tensors": [{"name": "a", "dtype": "float32", "shape": [2**62, 4]}]},  # size overflows int64
        {
            "tensors": [{"name": "a", "dtype": "float32", "shape": [0, 2**64 - 1]}]
        },  # no bytes, past NumPy's index
        {
            "tensors": [{"name": "a", "dtype": "float32", "shape": [0] * 70}]
        },  # more dimensions than NumPy's 64
        {"tensors": [{"name": "a", "dtype": "float32", "shape": [True]}]},  # a bool is no dimension
        {"tensors": [{"name": 7, "dtype": "float32", "shape": [1]}]},  # a name that is not text
    ],
    ids=[
        "no-shape",
        "no-name",
        "str-dim",
        "scalar-shape",
        "str-spec",
        "int-tensors",
        "huge-shape",
        "empty-huge-dim",
        "too-many-dims",
        "bool-dim",
        "int-name",
    ],
)
def test_malformed_tensor_specs_are_bad_request(header: dict[str, Any]) -> None:
    with pytest.raises(BadRequest):
        decode_frame(raw_frame(header, b"\x00" * 4))
