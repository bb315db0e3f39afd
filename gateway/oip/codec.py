"""Open Inference Protocol v2 tensors: datatypes, JSON and binary encodings (pure, no I/O).

The REST protocol (KServe "V2", Triton's HTTP API) carries each tensor as `{name, datatype, shape, data}`
with `data` flattened in row-major order, or, with the binary tensor extension, as raw little-endian bytes
after the JSON header (`Inference-Header-Content-Length` says where the JSON ends). BYTES elements are
each a 4-byte little-endian length followed by the bytes. Malformed tensors are `BadRequest` (400): the
protocol's own framing is wrong; whether a well-formed tensor fits a model is the gateway's 422.
"""

from __future__ import annotations

import math
import struct
import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from infaas.core.errors import BadRequest, PayloadTooLarge

# OIP datatype ↔ NumPy dtype. BYTES is an object array of `bytes`.
DATATYPES: dict[str, np.dtype[Any]] = {
    "BOOL": np.dtype(np.bool_),
    "UINT8": np.dtype(np.uint8),
    "UINT16": np.dtype(np.uint16),
    "UINT32": np.dtype(np.uint32),
    "UINT64": np.dtype(np.uint64),
    "INT8": np.dtype(np.int8),
    "INT16": np.dtype(np.int16),
    "INT32": np.dtype(np.int32),
    "INT64": np.dtype(np.int64),
    "FP16": np.dtype(np.float16),
    "FP32": np.dtype(np.float32),
    "FP64": np.dtype(np.float64),
    "BYTES": np.dtype(np.object_),
}
_BY_NUMPY = {dt.name: name for name, dt in DATATYPES.items() if name != "BYTES"}
_LENGTH = struct.Struct("<I")

# Which kinds of JSON numbers each datatype accepts: JSON has no distinction between 1 and 1.0 for
# floats, but an integer tensor given 1.5 (or a bool tensor given 1) is a client bug worth a 400.
_JSON_KINDS = {"b": "b", "i": "iu", "u": "iu", "f": "iuf"}


def datatype_of(dtype: np.dtype[Any] | str) -> str:
    """The OIP datatype of a NumPy dtype (or dtype name); BYTES for strings and objects."""
    dt = np.dtype(dtype)
    if dt.kind in "OSU":
        return "BYTES"
    name = _BY_NUMPY.get(dt.name)
    if name is None:
        raise BadRequest(f"no Open Inference Protocol datatype for {dt.name}")
    return name


def numpy_dtype(datatype: object) -> np.dtype[Any]:
    if not isinstance(datatype, str) or datatype not in DATATYPES:
        raise BadRequest(f"unknown datatype {datatype!r}; expected one of {', '.join(DATATYPES)}")
    return DATATYPES[datatype]


def check_shape(name: str, shape: object) -> tuple[int, ...]:
    if not isinstance(shape, list) or not all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape
    ):
        raise BadRequest(f"input {name!r}: shape must be a list of non-negative integers")
    return tuple(shape)


def decode_json(name: str, datatype: str, shape: tuple[int, ...], data: object) -> np.ndarray:
    """A tensor from its JSON `data` (flat row-major, or nested): exactly `prod(shape)` elements."""
    dtype = numpy_dtype(datatype)
    if not isinstance(data, list):
        raise BadRequest(f"input {name!r}: data must be a list")
    count = math.prod(shape)
    if datatype == "BYTES":
        flat = _flatten(name, data)
        if not all(isinstance(x, str) for x in flat):
            raise BadRequest(f"input {name!r}: BYTES data must be strings")
        array = np.empty(len(flat), dtype=object)
        array[:] = [x.encode() for x in flat]
    else:
        try:
            raw = np.asarray(data)
        except ValueError as exc:  # ragged nesting
            raise BadRequest(f"input {name!r}: data is ragged") from exc
        if raw.size == 0:
            raw = raw.astype(dtype)
        elif dtype.kind in "iu" and raw.dtype.kind in "fO":
            raw = _big_integers(name, data, raw)
        if raw.dtype.kind not in _JSON_KINDS[dtype.kind]:
            raise BadRequest(
                f"input {name!r}: data must hold {datatype} values; got {_json_kind(raw.dtype)}",
            )
        array = _cast(name, datatype, raw.reshape(-1), dtype)
    if array.size != count:
        raise BadRequest(f"input {name!r}: shape {list(shape)} needs {count} elements; data has {array.size}")
    return array.reshape(shape)


def _flatten(name: str, data: list[Any]) -> list[Any]:
    out: list[Any] = []
    stack: list[Any] = [iter(data)]
    while stack:
        for item in stack[-1]:
            if isinstance(item, list):
                stack.append(iter(item))
                break
            out.append(item)
        else:
            stack.pop()
        if len(stack) > 64:
            raise BadRequest(f"input {name!r}: data is nested too deeply")
    return out


def _big_integers(name: str, data: list[Any], raw: np.ndarray) -> np.ndarray:
    """Integers beyond int64 (UINT64's upper half) make NumPy guess float64 or object: keep them exact."""
    flat = _flatten(name, data)
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in flat):
        return raw  # really floats or mixed values: the kind check reports it
    if min(flat) < np.iinfo(np.int64).min or max(flat) > np.iinfo(np.uint64).max:
        raise BadRequest(f"input {name!r}: integers beyond 64 bits")
    return np.array(flat, dtype=np.uint64 if min(flat) >= 0 else np.int64)


def _json_kind(dtype: np.dtype[Any]) -> str:
    return {"b": "booleans", "i": "integers", "u": "integers", "f": "numbers", "U": "strings"}.get(
        dtype.kind, "mixed or non-numeric values"
    )


def _cast(name: str, datatype: str, raw: np.ndarray, dtype: np.dtype[Any]) -> np.ndarray:
    if dtype.kind in "iu" and raw.size:
        info = np.iinfo(dtype)
        if int(raw.min()) < info.min or int(raw.max()) > info.max:
            raise BadRequest(f"input {name!r}: values outside the range of {datatype}")
    if dtype.kind == "f" and raw.dtype != dtype:
        with np.errstate(over="ignore"):
            out = raw.astype(dtype)
        if not np.isfinite(out).all():
            raise BadRequest(f"input {name!r}: values outside the range of {datatype}")
        return out
    return raw.astype(dtype, copy=False)


def decode_binary(name: str, datatype: str, shape: tuple[int, ...], raw: bytes) -> np.ndarray:
    """A tensor from the binary extension's bytes (little-endian; BYTES length-prefixed)."""
    dtype = numpy_dtype(datatype)
    count = math.prod(shape)
    if datatype == "BYTES":
        array = deserialize_bytes(name, raw)
        if array.size != count:
            raise BadRequest(
                f"input {name!r}: shape {list(shape)} needs {count} elements; data has {array.size}"
            )
        return array.reshape(shape)
    if len(raw) != count * dtype.itemsize:
        raise BadRequest(
            f"input {name!r}: shape {list(shape)} of {datatype} is {count * dtype.itemsize} bytes; "
            f"got {len(raw)}"
        )
    array = np.frombuffer(raw, dtype=dtype.newbyteorder("<")).reshape(shape)
    if datatype == "BOOL" and array.size and int(np.frombuffer(raw, dtype=np.uint8).max()) > 1:
        raise BadRequest(f"input {name!r}: BOOL bytes must be 0 or 1")
    return array.astype(dtype, copy=False)


def serialize_bytes(array: np.ndarray) -> bytes:
    """BYTES elements (bytes or str) as 4-byte little-endian lengths, each followed by the bytes."""
    parts = []
    for item in array.reshape(-1):
        data = item.encode() if isinstance(item, str) else bytes(item)
        parts.append(_LENGTH.pack(len(data)))
        parts.append(data)
    return b"".join(parts)


def deserialize_bytes(name: str, raw: bytes) -> np.ndarray:
    items: list[bytes] = []
    offset = 0
    while offset < len(raw):
        if offset + _LENGTH.size > len(raw):
            raise BadRequest(f"input {name!r}: truncated BYTES element length")
        (length,) = _LENGTH.unpack_from(raw, offset)
        offset += _LENGTH.size
        if offset + length > len(raw):
            raise BadRequest(f"input {name!r}: BYTES element longer than the data")
        items.append(raw[offset : offset + length])
        offset += length
    array = np.empty(len(items), dtype=object)
    array[:] = items
    return array


def encode_json(array: np.ndarray) -> list[Any]:
    """Flat row-major JSON data of an output tensor (BYTES as UTF-8 strings)."""
    flat = array.reshape(-1)
    if flat.dtype.kind in "OSU":
        try:
            return [x.decode() if isinstance(x, bytes) else str(x) for x in flat]
        except UnicodeDecodeError as exc:
            raise BadRequest("an output holds bytes that are not UTF-8: request it as binary data") from exc
    data: list[Any] = flat.tolist()
    return data


def encode_binary(array: np.ndarray) -> bytes:
    if array.dtype.kind in "OSU":
        return serialize_bytes(array)
    return np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()


def split_body(body: bytes, header_length: str | None) -> tuple[bytes, bytes]:
    """The JSON part and the binary part of a request body."""
    if header_length is None:
        return body, b""
    try:
        size = int(header_length)
    except ValueError:
        size = -1
    if not 0 <= size <= len(body):
        raise BadRequest(
            f"Inference-Header-Content-Length must be an integer between 0 and the body size "
            f"({len(body)}); got {header_length!r}"
        )
    return body[:size], body[size:]


def decompress(body: bytes, encoding: str | None, *, limit: int) -> bytes:
    """A gzip/deflate request body (tritonclient's `request_compression_algorithm`), at most `limit`."""
    coding = (encoding or "identity").strip().lower()
    if coding == "identity":
        return body
    if coding not in ("gzip", "deflate"):
        raise BadRequest(f"unsupported Content-Encoding {encoding!r}: use gzip, deflate or none")
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS if coding == "gzip" else zlib.MAX_WBITS)
    try:
        out = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise BadRequest(f"the body is not valid {coding} data") from exc
    if len(out) > limit:
        raise PayloadTooLarge(f"the decompressed body is larger than {limit} bytes", limit=limit)
    if not inflater.eof:
        raise BadRequest(f"the {coding} body is truncated")
    return out


@dataclass
class RequestedOutput:
    name: str
    binary: bool


@dataclass
class InferRequestV2:
    """A decoded inference request: the tensors in request order, and what to answer."""

    id: str | None
    parameters: dict[str, Any]
    inputs: dict[str, np.ndarray]
    outputs: list[RequestedOutput] | None = field(default=None)
    binary_output: bool = False


def parse_request(json_part: bytes, binary: bytes, loads: Any) -> InferRequestV2:
    """Decode the request JSON (with `loads`) and the binary tensors it refers to, in order."""
    try:
        data = loads(json_part)
    except ValueError as exc:
        raise BadRequest("the inference request is not valid JSON", reason=str(exc)[:200]) from exc
    if not isinstance(data, dict):
        raise BadRequest("the inference request must be a JSON object")
    unknown = set(data) - {"id", "parameters", "inputs", "outputs"}
    if unknown:
        raise BadRequest(f"unknown fields in the inference request: {sorted(unknown)}")
    request_id = data.get("id")
    if request_id is not None and not isinstance(request_id, str):
        raise BadRequest("id must be a string")
    parameters = _parameters(data.get("parameters"), "the request")
    raw_inputs = data.get("inputs")
    if not isinstance(raw_inputs, list) or not raw_inputs:
        raise BadRequest("inputs must be a non-empty list of tensors")
    inputs: dict[str, np.ndarray] = {}
    offset = 0
    for tensor in raw_inputs:
        if not isinstance(tensor, dict):
            raise BadRequest("each input must be an object {name, shape, datatype, data}")
        name = tensor.get("name")
        if not isinstance(name, str) or not name:
            raise BadRequest("each input needs a name")
        if name in inputs:
            raise BadRequest(f"input {name!r} is given twice")
        shape = check_shape(name, tensor.get("shape"))
        datatype = tensor.get("datatype")
        numpy_dtype(datatype)
        assert isinstance(datatype, str)
        params = _parameters(tensor.get("parameters"), f"input {name!r}")
        if any(k.startswith("shared_memory") for k in params):
            raise BadRequest(f"input {name!r}: shared memory is not supported; send the data")
        size = params.get("binary_data_size")
        if size is not None:
            if not isinstance(size, int) or isinstance(size, bool) or size < 0:
                raise BadRequest(f"input {name!r}: binary_data_size must be a non-negative integer")
            if "data" in tensor:
                raise BadRequest(f"input {name!r} has both data and binary_data_size")
            if offset + size > len(binary):
                raise BadRequest(f"input {name!r}: binary data ends before its binary_data_size")
            inputs[name] = decode_binary(name, datatype, shape, binary[offset : offset + size])
            offset += size
        elif "data" in tensor:
            inputs[name] = decode_json(name, datatype, shape, tensor["data"])
        else:
            raise BadRequest(f"input {name!r} has no data and no binary_data_size")
    if offset != len(binary):
        raise BadRequest(f"{len(binary) - offset} bytes of binary data follow that no input refers to")
    outputs = _requested_outputs(data.get("outputs"))
    binary_output = parameters.pop("binary_data_output", False)
    if not isinstance(binary_output, bool):
        raise BadRequest("binary_data_output must be a boolean")
    return InferRequestV2(request_id, parameters, inputs, outputs, binary_output)


def _parameters(raw: object, where: str) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise BadRequest(f"parameters of {where} must be an object")
    return dict(raw)


def _requested_outputs(raw: object) -> list[RequestedOutput] | None:
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise BadRequest("outputs must be a list of {name, parameters}")
    out: list[RequestedOutput] = []
    for item in raw:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise BadRequest("each requested output needs a name")
        params = _parameters(item.get("parameters"), f"output {item['name']!r}")
        if any(k.startswith("shared_memory") for k in params):
            raise BadRequest(f"output {item['name']!r}: shared memory is not supported")
        if params.get("classification"):
            raise BadRequest(f"output {item['name']!r}: the classification extension is not supported")
        binary = params.get("binary_data", False)
        if not isinstance(binary, bool):
            raise BadRequest(f"output {item['name']!r}: binary_data must be a boolean")
        out.append(RequestedOutput(item["name"], binary))
    return out
