"""Model I/O signatures and the conversion of request payloads into validated NumPy tensors.

Validation happens at the gateway, before anything is queued: a wrong shape or dtype costs the
system one parse, never a trip to a worker.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto

from infaas.core.errors import InvalidInput, InvalidModel

# ONNX element types we serve, with the NumPy dtype and the Open Inference Protocol datatype name.
_ONNX_TO_NUMPY: dict[int, str] = {
    TensorProto.FLOAT: "float32",
    TensorProto.DOUBLE: "float64",
    TensorProto.FLOAT16: "float16",
    TensorProto.INT8: "int8",
    TensorProto.INT16: "int16",
    TensorProto.INT32: "int32",
    TensorProto.INT64: "int64",
    TensorProto.UINT8: "uint8",
    TensorProto.BOOL: "bool",
}


@dataclass(frozen=True, slots=True)
class TensorSpec:
    """One named tensor: dtype (NumPy name) and shape, `None` for a dynamic dimension."""

    name: str
    dtype: str
    shape: tuple[int | None, ...]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "dtype": self.dtype, "shape": list(self.shape)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TensorSpec:
        return cls(name=str(data["name"]), dtype=str(data["dtype"]), shape=tuple(data["shape"]))


@dataclass(frozen=True, slots=True)
class Signature:
    """A model's inputs and outputs. The first dimension of every tensor is the batch."""

    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "inputs": [t.to_json() for t in self.inputs],
            "outputs": [t.to_json() for t in self.outputs],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Signature:
        return cls(
            inputs=tuple(TensorSpec.from_json(t) for t in data["inputs"]),
            outputs=tuple(TensorSpec.from_json(t) for t in data["outputs"]),
        )

    @property
    def key(self) -> str:
        """A compact identity: two models with equal keys accept the same queries."""
        parts = [
            f"{t.name}:{t.dtype}:{'x'.join('?' if d is None else str(d) for d in t.shape[1:])}"
            for t in self.inputs
        ]
        return "|".join(parts)


def validation_keys(signature: Signature) -> list[str]:
    """Keys of a validation `.npz` holding each input: `x` for a one-input model, else the input names."""
    return ["x"] if len(signature.inputs) == 1 else [s.name for s in signature.inputs]


def _spec_from_value_info(value: onnx.ValueInfoProto) -> TensorSpec:
    tensor_type = value.type.tensor_type
    dtype = _ONNX_TO_NUMPY.get(tensor_type.elem_type)
    if dtype is None:
        raise InvalidModel(
            f"tensor {value.name!r} has an element type this system does not serve",
            tensor=value.name,
        )
    dims: list[int | None] = []
    for dim in tensor_type.shape.dim:
        dims.append(dim.dim_value if dim.HasField("dim_value") and dim.dim_value > 0 else None)
    if not dims:
        raise InvalidModel(
            f"tensor {value.name!r} is a scalar; a batch dimension is required", tensor=value.name
        )
    return TensorSpec(name=value.name, dtype=dtype, shape=tuple(dims))


def load_onnx(model_bytes: bytes) -> onnx.ModelProto:
    """Parse and check an ONNX model; any failure is an `InvalidModel` (422), never a crash."""
    try:
        model = onnx.load_model_from_string(model_bytes)
    except Exception as exc:  # the protobuf parser raises several unrelated types
        raise InvalidModel("the file is not an ONNX model", reason=str(exc)[:200]) from exc
    if not model.graph.node or not model.graph.output:
        raise InvalidModel("the ONNX model has an empty graph")
    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception as exc:
        raise InvalidModel("the ONNX model failed the ONNX checker", reason=str(exc)[:300]) from exc
    return model


def read_signature(model: onnx.ModelProto) -> Signature:
    """Signature of a checked ONNX model (graph inputs that are initializers are weights, not inputs)."""
    initializers = {init.name for init in model.graph.initializer}
    inputs = tuple(_spec_from_value_info(v) for v in model.graph.input if v.name not in initializers)
    outputs = tuple(_spec_from_value_info(v) for v in model.graph.output)
    if not inputs:
        raise InvalidModel("the ONNX model has no inputs")
    return Signature(inputs=inputs, outputs=outputs)


def coerce_batch(raw: Any, spec: TensorSpec, *, max_rows: int) -> np.ndarray:
    """Turn a JSON batch (nested lists) into an array of the spec's dtype and shape, or raise 422."""
    if not isinstance(raw, list) or not raw:
        raise InvalidInput(f"input {spec.name!r} must be a non-empty list of rows (a batch)", input=spec.name)
    if len(raw) > max_rows:
        raise InvalidInput(
            f"a query carries at most {max_rows} rows; got {len(raw)}", input=spec.name, max_rows=max_rows
        )
    try:
        array = np.asarray(raw)
    except ValueError as exc:  # ragged nesting
        raise InvalidInput(
            f"input {spec.name!r} is ragged: every row must have the same shape", input=spec.name
        ) from exc
    want = _dtype(spec.dtype)
    within = want.kind == "f" and array.dtype.kind == "f" and _small_within(raw, array, want)
    return check_array(array, spec, max_rows=max_rows, within_range=within)


SMALL_CHECK_MAX = 1024
"""Up to this many values, a float batch's range is checked over the JSON numbers themselves."""


def _small_within(raw: list[Any], array: np.ndarray, target: np.dtype[Any]) -> bool:
    """Whether a small batch of one or two dimensions is surely within the float dtype `target`'s range,
    by the sum of its numbers' magnitudes (builtins over the parsed JSON): at the low rates a core is
    shared at, NumPy's two reductions cost ~50 µs on cold caches against ~35 (docs/benchmarks.md, "Cold
    caches"). A NaN or infinity makes the sum fail the bound, as does a sum past it (many large values):
    False then leaves the exact check to `check_array`."""
    if array.size > SMALL_CHECK_MAX or array.ndim > 2:
        return False
    total = sum(map(abs, raw)) if array.ndim == 1 else sum(sum(map(abs, row)) for row in raw)
    return bool(total <= _FLOAT_MAX[target.char])


# Which source kinds may become which target kinds (JSON integers arrive as int64, so unsigned targets
# accept signed sources; the value range is checked separately). Booleans are numbers to no one: JSON
# `true` where a number is due is a mistake, refused here by the array's dtype, without a look at values.
_KIND_OK: dict[str, str] = {"f": "fiu", "i": "iu", "u": "iu", "b": "b"}


def _dtype(name: str) -> np.dtype[Any]:
    """The NumPy dtype of a spec's dtype name, parsed once per name."""
    found = _DTYPES.get(name)
    if found is None:
        found = _DTYPES[name] = np.dtype(name)
    return found


_DTYPES: dict[str, np.dtype[Any]] = {}


def check_array(
    array: np.ndarray, spec: TensorSpec, *, max_rows: int, within_range: bool = False
) -> np.ndarray:
    """Check an array against a spec, converting only where the conversion is exact in kind.
    `within_range`: the caller knows every value fits a float target's range (`_small_within`)."""
    want = _dtype(spec.dtype)
    if array.dtype.kind not in _KIND_OK.get(want.kind, want.kind):
        raise InvalidInput(
            f"input {spec.name!r} must hold {spec.dtype} values; got {array.dtype.name}",
            input=spec.name,
            expected_dtype=spec.dtype,
            got_dtype=array.dtype.name,
        )
    if array.ndim != len(spec.shape):
        raise InvalidInput(
            f"input {spec.name!r} must have shape {_shape_text(spec.shape)}; got {list(array.shape)}",
            input=spec.name,
            expected_shape=list(spec.shape),
            got_shape=list(array.shape),
        )
    for got, expected in zip(array.shape[1:], spec.shape[1:], strict=True):
        if expected is not None and got != expected:
            raise InvalidInput(
                f"input {spec.name!r} must have shape {_shape_text(spec.shape)}; got {list(array.shape)}",
                input=spec.name,
                expected_shape=list(spec.shape),
                got_shape=list(array.shape),
            )
    if array.shape[0] == 0 or array.shape[0] > max_rows:
        raise InvalidInput(
            f"a query carries 1 to {max_rows} rows; got {array.shape[0]}", input=spec.name, max_rows=max_rows
        )
    if want.kind in "iu" and array.dtype.kind in "iu":
        info = np.iinfo(want)
        if int(array.min()) < info.min or int(array.max()) > info.max:
            raise InvalidInput(
                f"input {spec.name!r} holds values outside the range of {spec.dtype}",
                input=spec.name,
                min=info.min,
                max=info.max,
            )
    if want.kind == "f" and not within_range:
        # Within the target's finite range before the cast (a finite float64 can overflow float32 or
        # float16 into inf), so the cast cannot overflow; NaN fails both comparisons. Two reductions on
        # the source cost less than a cast under `np.errstate` and a finiteness pass after it.
        limit = _FLOAT_MAX[want.char]
        if array.size and not (-limit <= array.min() and array.max() <= limit):
            raise InvalidInput(
                f"input {spec.name!r} holds NaN, infinite or out-of-range values", input=spec.name
            )
    return np.ascontiguousarray(array, dtype=want)


_FLOAT_MAX = {np.dtype(t).char: float(np.finfo(t).max) for t in ("float16", "float32", "float64")}
"""The largest finite value of each float dtype served, by dtype character."""


def _shape_text(shape: tuple[int | None, ...]) -> str:
    return (
        "["
        + ", ".join("batch" if i == 0 else ("any" if d is None else str(d)) for i, d in enumerate(shape))
        + "]"
    )
