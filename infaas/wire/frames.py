"""Binary frames for tensors between services: a small JSON header followed by raw array bytes.

`[4-byte big-endian header length][orjson header][tensor bytes...]`, where the header's `tensors` lists
`{name, dtype, shape}` in the order their bytes follow. No pickling, no per-element Python objects: a
frame decodes into NumPy views over the received buffer.
"""

from __future__ import annotations

import math
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
# as the rest of a small frame's decoding).
_WIRE_DTYPES = {n: np.dtype(n).newbyteorder("<") for n in _ALLOWED_DTYPES}


def encode_frame(header: Mapping[str, Any], tensors: Mapping[str, np.ndarray]) -> bytes:
    """Pack a header and named arrays into one frame."""
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
    """Unpack a frame; a malformed frame is a `BadRequest`, never an exception from NumPy."""
    if len(frame) < _LEN.size:
        raise BadRequest("truncated frame")
    (head_len,) = _LEN.unpack_from(frame, 0)
    start = _LEN.size + head_len
    if start > len(frame):
        raise BadRequest("truncated frame header")
    try:
        header = orjson.loads(frame[_LEN.size : start])
    except orjson.JSONDecodeError as exc:
        raise BadRequest("frame header is not JSON") from exc
    if not isinstance(header, dict):
        raise BadRequest("frame header must be an object")
    tensors: dict[str, np.ndarray] = {}
    offset = start
    view = memoryview(frame)
    specs = header.pop("tensors", [])
    if not isinstance(specs, list):
        raise BadRequest("frame 'tensors' must be a list")
    for spec in specs:
        name, dtype, shape = _check_spec(spec)
        size = math.prod(shape) * dtype.itemsize  # exact integers: no int64 overflow to hide a shape
        if offset + size > len(frame):
            raise BadRequest("frame shorter than its tensors")
        tensors[name] = np.frombuffer(view[offset : offset + size], dtype=dtype).reshape(shape)
        offset += size
    if offset != len(frame):
        raise BadRequest("trailing bytes after the frame's tensors")
    return header, tensors


def _check_spec(spec: Any) -> tuple[str, np.dtype[Any], tuple[int, ...]]:
    if not isinstance(spec, dict):
        raise BadRequest("each frame tensor must be an object")
    name, dtype_name, shape = spec.get("name"), spec.get("dtype"), spec.get("shape")
    if not isinstance(name, str):
        raise BadRequest("frame tensor without a name")
    dtype = _WIRE_DTYPES.get(dtype_name) if isinstance(dtype_name, str) else None
    if dtype is None:
        raise BadRequest(f"unsupported dtype {dtype_name!r} in frame")
    if not isinstance(shape, list) or not all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape
    ):
        raise BadRequest("frame tensor shape must be a list of non-negative integers")
    return name, dtype, tuple(shape)
