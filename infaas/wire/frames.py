"""Binary frames for tensors between services: a small JSON header followed by raw array bytes.

`[4-byte big-endian header length][orjson header][tensor bytes...]`, where the header's `tensors` lists
`{name, dtype, shape}` in the order their bytes follow. No pickling, no per-element Python objects: a
frame decodes into NumPy views over the received buffer.
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Mapping
from typing import Any

import numpy as np
import orjson

from infaas.core.errors import BadRequest

_LEN = struct.Struct(">I")
_LITTLE = sys.byteorder == "little"
_ALLOWED_DTYPES = frozenset(
    {"float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool"}
)
_NAMES = {np.dtype(n).newbyteorder("<"): n for n in _ALLOWED_DTYPES}
# Little-endian on the wire, whatever the host; built once (a dtype per tensor per frame costs as much
# as the rest of a small frame's decoding). On a little-endian host these are NumPy's own dtype objects,
# the ones every array of those types carries, so `_NATIVE` finds a decoded array's name by identity.
_WIRE_DTYPES = {n: np.dtype(n) if _LITTLE else np.dtype(n).newbyteorder("<") for n in _ALLOWED_DTYPES}
_NATIVE = {id(d): n for n, d in _WIRE_DTYPES.items()} if _LITTLE else {}
"""A wire dtype's name by the identity of NumPy's dtype object: no hashing of a dtype (which NumPy
computes from its fields at each call) on the query path."""


def encode_frame(header: Mapping[str, Any], tensors: Mapping[str, np.ndarray]) -> bytes:
    """Pack a header and named arrays into one frame.

    The common case — C-contiguous arrays of a wire dtype in the host's (little-endian) order — goes
    straight into the frame's one copy; anything else is converted first (`_encode_converted`). At the
    low rates a core is shared at, each NumPy entry point costs tens of µs on cold caches, so the
    common case calls none (docs/benchmarks.md, "Cold caches")."""
    specs = []
    chunks: list[Any] = []
    for name, array in tensors.items():
        dtype = _NATIVE.get(id(array.dtype))
        if dtype is None:
            return _encode_converted(header, tensors)
        specs.append({"name": name, "dtype": dtype, "shape": array.shape})
        chunks.append(array)
    head = orjson.dumps({**header, "tensors": specs})
    try:
        return b"".join([_LEN.pack(len(head)), head, *chunks])
    except TypeError:  # a strided view: no contiguous buffer to join
        return _encode_converted(header, tensors)


def _encode_converted(header: Mapping[str, Any], tensors: Mapping[str, np.ndarray]) -> bytes:
    """`encode_frame` for arrays that are strided, big-endian or of a dtype NumPy does not share."""
    specs = []
    chunks = []
    for name, array in tensors.items():
        contiguous = np.ascontiguousarray(array)
        if contiguous.dtype.byteorder == ">" or (contiguous.dtype.byteorder == "=" and not _LITTLE):
            contiguous = contiguous.astype(contiguous.dtype.newbyteorder("<"))  # frames are little-endian
        dtype = _NAMES.get(contiguous.dtype) or contiguous.dtype.name  # `.name` is slow Python code
        specs.append({"name": name, "dtype": dtype, "shape": list(contiguous.shape)})
        chunks.append(contiguous.tobytes())
    head = orjson.dumps({**header, "tensors": specs})
    return b"".join([_LEN.pack(len(head)), head, *chunks])


Decoded = tuple[dict[str, Any], dict[str, np.ndarray]]
"""A decoded frame: its header and its tensors by name."""


def peek_header(frame: bytes | memoryview) -> dict[str, Any]:
    """Only the JSON header of a frame (for routing an answer without touching its tensors)."""
    if len(frame) < _LEN.size:
        raise BadRequest("truncated frame")
    (head_len,) = _LEN.unpack_from(frame, 0)
    try:
        header = orjson.loads(frame[_LEN.size : _LEN.size + head_len])
    except orjson.JSONDecodeError as exc:
        raise BadRequest("frame header is not JSON") from exc
    if not isinstance(header, dict):
        raise BadRequest("frame header must be an object")
    return header


def decode_frame(frame: bytes | memoryview) -> Decoded:
    """Unpack a frame; a malformed frame is a `BadRequest`, never an exception from NumPy. Each tensor
    is an array over the frame's own bytes (one NumPy call each, no copy)."""
    end = len(frame)
    if end < _LEN.size:
        raise BadRequest("truncated frame")
    (head_len,) = _LEN.unpack_from(frame, 0)
    start = _LEN.size + head_len
    if start > end:
        raise BadRequest("truncated frame header")
    try:
        header = orjson.loads(frame[_LEN.size : start])
    except orjson.JSONDecodeError as exc:
        raise BadRequest("frame header is not JSON") from exc
    if type(header) is not dict:
        raise BadRequest("frame header must be an object")
    specs = header.pop("tensors", [])
    if type(specs) is not list:
        raise BadRequest("frame 'tensors' must be a list")
    tensors: dict[str, np.ndarray] = {}
    offset = start
    for spec in specs:
        name, dtype, shape, size = _check_spec(spec)
        if offset + size > end:
            raise BadRequest("frame shorter than its tensors")
        try:
            tensors[name] = np.ndarray(shape, dtype, frame, offset)
        except (ValueError, OverflowError) as exc:  # more dimensions than NumPy has, or one past its index
            raise BadRequest(f"frame tensor shape {shape} is not one NumPy can hold") from exc
        offset += size
    if offset != end:
        raise BadRequest("trailing bytes after the frame's tensors")
    return header, tensors


def _check_spec(spec: Any) -> tuple[str, np.dtype[Any], list[int], int]:
    """A tensor's name, dtype, shape and size in bytes, checked (exact integers: no int64 overflow to
    hide a shape)."""
    if type(spec) is not dict:
        raise BadRequest("each frame tensor must be an object")
    name, dtype_name, shape = spec.get("name"), spec.get("dtype"), spec.get("shape")
    if type(name) is not str:
        raise BadRequest("frame tensor without a name")
    dtype = _WIRE_DTYPES.get(dtype_name) if type(dtype_name) is str else None
    if dtype is None:
        raise BadRequest(f"unsupported dtype {dtype_name!r} in frame")
    if type(shape) is not list:
        raise BadRequest("frame tensor shape must be a list of non-negative integers")
    size = dtype.itemsize
    for d in shape:
        if type(d) is not int or d < 0:  # `type`: a bool is an int to `isinstance`
            raise BadRequest("frame tensor shape must be a list of non-negative integers")
        size *= d
    return name, dtype, shape, size
