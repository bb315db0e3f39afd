"""Open Inference Protocol tensors: every datatype both ways, checked against tritonclient's own codecs."""

from __future__ import annotations

import gzip
import zlib

import numpy as np
import orjson
import pytest
from tritonclient.utils import deserialize_bytes_tensor, np_to_triton_dtype, serialize_byte_tensor

from gateway.oip import codec
from infaas.core.errors import BadRequest, PayloadTooLarge

NUMERIC = [
    "BOOL",
    "UINT8",
    "UINT16",
    "UINT32",
    "UINT64",
    "INT8",
    "INT16",
    "INT32",
    "INT64",
    "FP16",
    "FP32",
    "FP64",
]


def sample(datatype: str) -> np.ndarray:
    dtype = codec.DATATYPES[datatype]
    if datatype == "BOOL":
        return np.array([[True, False, True], [False, False, True]])
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return np.array([[info.min, 0, info.max], [1, 2, 3]], dtype=dtype)
    return np.array([[-1.5, 0.0, 65504.0 if datatype == "FP16" else 3.25e30], [1, 2, 0.125]], dtype=dtype)


@pytest.mark.parametrize("datatype", NUMERIC)
def test_each_numeric_datatype_round_trips_through_json_and_binary(datatype: str) -> None:
    array = sample(datatype)
    assert codec.datatype_of(array.dtype) == datatype == np_to_triton_dtype(array.dtype)
    # JSON: what a client sends is what the server would answer (flat, row-major), through real JSON.
    data = orjson.loads(orjson.dumps(codec.encode_json(array)))
    decoded = codec.decode_json("x", datatype, array.shape, data)
    assert decoded.dtype == array.dtype and np.array_equal(decoded, array)
    # Binary: little-endian bytes, exactly what tritonclient's InferInput sends.
    blob = codec.encode_binary(array)
    assert blob == array.astype(array.dtype.newbyteorder("<")).tobytes()
    back = codec.decode_binary("x", datatype, array.shape, blob)
    assert back.dtype == array.dtype and np.array_equal(back, array)


def test_bytes_match_tritonclients_serialization_both_ways() -> None:
    array = np.array([[b"a", b""], ["\u00e9t\u00e9".encode(), b"\x00\xff"]], dtype=object)
    assert codec.datatype_of(array.dtype) == "BYTES"
    blob = codec.encode_binary(array)
    assert blob == serialize_byte_tensor(array).item()
    decoded = codec.decode_binary("s", "BYTES", (2, 2), blob)
    assert (
        decoded.shape == (2, 2) and decoded.tolist() == deserialize_bytes_tensor(blob).reshape(2, 2).tolist()
    )
    # JSON carries BYTES as strings; nested data is accepted as well as flat.
    as_json = codec.decode_json("s", "BYTES", (2, 1), [["h\u00e9"], ["x"]])
    assert as_json.tolist() == [["h\u00e9".encode()], [b"x"]]
    assert codec.encode_json(as_json) == ["h\u00e9", "x"]
    with pytest.raises(BadRequest, match="not UTF-8"):
        codec.encode_json(np.array([b"\xff"], dtype=object))


def test_json_data_of_the_wrong_kind_or_size_is_a_400_naming_the_input() -> None:
    cases = [
        ("INT32", (2,), [1, 2.5], "must hold INT32"),
        ("BOOL", (2,), [1, 0], "must hold BOOL"),
        ("FP32", (2,), ["1", "2"], "got strings"),
        ("FP32", (3,), [1.0, 2.0], "needs 3 elements"),
        ("FP32", (2, 2), [[1.0, 2.0], [3.0]], "ragged"),
        ("UINT8", (2,), [1, 256], "outside the range of UINT8"),
        ("INT8", (1,), [-129], "outside the range of INT8"),
        ("FP16", (1,), [1e6], "outside the range of FP16"),
        ("FP32", (1,), [None], "non-numeric"),
        ("BYTES", (1,), [1], "BYTES data must be strings"),
        ("FP32", (1,), {"a": 1}, "data must be a list"),
    ]
    for datatype, shape, data, message in cases:
        with pytest.raises(BadRequest, match=message) as info:
            codec.decode_json("inp", datatype, shape, data)
        assert "'inp'" in info.value.message
    # JSON has one kind of number: integers are fine for float tensors and come out as floats.
    assert codec.decode_json("x", "FP64", (2,), [1, 2]).dtype == np.float64


def test_binary_data_of_the_wrong_size_is_a_400() -> None:
    with pytest.raises(BadRequest, match="is 16 bytes; got 12"):
        codec.decode_binary("x", "FP32", (2, 2), b"\0" * 12)
    with pytest.raises(BadRequest, match="BOOL bytes must be 0 or 1"):
        codec.decode_binary("x", "BOOL", (2,), b"\x01\x02")
    with pytest.raises(BadRequest, match="truncated BYTES"):
        codec.decode_binary("x", "BYTES", (1,), b"\x01\x00")
    with pytest.raises(BadRequest, match="longer than the data"):
        codec.decode_binary("x", "BYTES", (1,), b"\x05\x00\x00\x00ab")
    with pytest.raises(BadRequest, match="needs 2 elements"):
        codec.decode_binary("x", "BYTES", (2,), b"\x01\x00\x00\x00a")


def test_unknown_datatypes_and_bad_shapes_are_refused() -> None:
    with pytest.raises(BadRequest, match="unknown datatype 'BF16'"):
        codec.numpy_dtype("BF16")
    for shape in ([-1, 2], [1.5], "3", [True]):
        with pytest.raises(BadRequest, match="non-negative integers"):
            codec.check_shape("x", shape)
    with pytest.raises(BadRequest, match="no Open Inference Protocol datatype"):
        codec.datatype_of(np.dtype("complex64"))


def request_body(inputs: list[dict[str, object]], blobs: list[bytes], **extra: object) -> tuple[bytes, str]:
    head = orjson.dumps({"inputs": inputs, **extra})
    return head + b"".join(blobs), str(len(head))


def test_a_request_mixing_json_and_binary_inputs_decodes_in_order() -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.array([[1], [2]], dtype=np.int64)
    body, length = request_body(
        [
            {"name": "a", "shape": [2, 3], "datatype": "FP32", "parameters": {"binary_data_size": a.nbytes}},
            {"name": "c", "shape": [2], "datatype": "BOOL", "data": [True, False]},
            {"name": "b", "shape": [2, 1], "datatype": "INT64", "parameters": {"binary_data_size": b.nbytes}},
        ],
        [a.tobytes(), b.tobytes()],
        id="q1",
        parameters={"latency_ms": 20, "binary_data_output": True},
        outputs=[{"name": "y", "parameters": {"binary_data": True}}, {"name": "z"}],
    )
    json_part, binary = codec.split_body(body, length)
    req = codec.parse_request(json_part, binary, orjson.loads)
    assert req.id == "q1" and req.parameters == {"latency_ms": 20} and req.binary_output is True
    assert list(req.inputs) == ["a", "c", "b"]
    assert np.array_equal(req.inputs["a"], a) and np.array_equal(req.inputs["b"], b)
    assert req.inputs["c"].tolist() == [True, False]
    assert req.outputs == [codec.RequestedOutput("y", True), codec.RequestedOutput("z", False)]


@pytest.mark.parametrize(
    ("inputs", "blobs", "length", "message"),
    [
        (
            [{"name": "a", "shape": [1], "datatype": "FP32", "parameters": {"binary_data_size": 4}}],
            [b"\0" * 8],
            None,
            "not valid JSON",
        ),
        (
            [{"name": "a", "shape": [1], "datatype": "FP32", "parameters": {"binary_data_size": 4}}],
            [b"\0" * 8],
            "auto",
            "4 bytes of binary data follow",
        ),
        (
            [{"name": "a", "shape": [1], "datatype": "FP32", "parameters": {"binary_data_size": 8}}],
            [b"\0" * 4],
            "auto",
            "ends before its binary_data_size",
        ),
        ([{"name": "a", "shape": [1], "datatype": "FP32"}], [], "auto", "no data and no binary_data_size"),
        ([{"name": "a", "shape": [1], "datatype": "FP32", "data": [1]}] * 2, [], "auto", "given twice"),
        (
            [
                {
                    "name": "a",
                    "shape": [1],
                    "datatype": "FP32",
                    "data": [1],
                    "parameters": {"shared_memory_region": "r"},
                }
            ],
            [],
            "auto",
            "shared memory is not supported",
        ),
        ([], [], "auto", "non-empty list"),
        (
            [{"name": "a", "shape": [1], "datatype": "FP32", "data": [1]}],
            [],
            "999",
            "Inference-Header-Content-Length",
        ),
    ],
)
def test_malformed_requests_are_400s(
    inputs: list[dict[str, object]], blobs: list[bytes], length: str | None, message: str
) -> None:
    body, auto = request_body(inputs, blobs)
    with pytest.raises(BadRequest, match=message):
        json_part, binary = codec.split_body(body, auto if length == "auto" else length)
        codec.parse_request(json_part, binary, orjson.loads)


def test_unknown_fields_and_unsupported_output_options_are_refused() -> None:
    ok = [{"name": "a", "shape": [1], "datatype": "FP32", "data": [1]}]
    for extra, message in (
        ({"inptus": []}, "unknown fields"),
        ({"outputs": [{"name": "y", "parameters": {"classification": 3}}]}, "classification"),
        ({"outputs": [{"parameters": {}}]}, "needs a name"),
        ({"parameters": {"binary_data_output": "yes"}}, "binary_data_output must be a boolean"),
        ({"id": 7}, "id must be a string"),
    ):
        with pytest.raises(BadRequest, match=message):
            codec.parse_request(orjson.dumps({"inputs": ok, **extra}), b"", orjson.loads)


def test_compressed_bodies_are_inflated_within_the_limit() -> None:
    body = b'{"inputs": []}' * 10
    assert codec.decompress(gzip.compress(body), "gzip", limit=1000) == body
    assert codec.decompress(zlib.compress(body), "deflate", limit=1000) == body
    assert codec.decompress(body, None, limit=10) == body  # identity: the body limit applies elsewhere
    with pytest.raises(PayloadTooLarge):
        codec.decompress(gzip.compress(b"\0" * 10_000), "gzip", limit=1000)  # a small bomb stays small
    with pytest.raises(BadRequest, match="not valid gzip"):
        codec.decompress(b"plain", "gzip", limit=1000)
    with pytest.raises(BadRequest, match="truncated"):
        codec.decompress(gzip.compress(body)[:-12], "gzip", limit=1000)
    with pytest.raises(BadRequest, match="unsupported Content-Encoding"):
        codec.decompress(body, "br", limit=1000)
