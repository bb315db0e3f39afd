"""ONNX signatures and the validation of request payloads into NumPy tensors."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from infaas.core.errors import InvalidInput, InvalidModel
from infaas.wire.tensors import (
    SMALL_CHECK_MAX,
    Signature,
    TensorSpec,
    check_array,
    coerce_batch,
    load_onnx,
    read_signature,
)

OPSET = [helper.make_opsetid("", 13)]


def matmul_softmax(*, batch: str | int = "N", weights_in_inputs: bool = True) -> bytes:
    """y = softmax(x @ W) with x [batch, 4] float32 and W [4, 3] an initializer."""
    w = numpy_helper.from_array(np.ones((4, 3), dtype=np.float32), "W")
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 4])]
    if weights_in_inputs:  # older exporters list initializers among the graph inputs
        inputs.append(helper.make_tensor_value_info("W", TensorProto.FLOAT, [4, 3]))
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "W"], ["h"]),
            helper.make_node("Softmax", ["h"], ["y"], axis=-1),
        ],
        "matmul_softmax",
        inputs,
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 3])],
        initializer=[w],
    )
    return helper.make_model(graph, opset_imports=OPSET).SerializeToString()


def single_op(
    op: str, inputs: list[tuple[str, int, list[int | str]]], output: tuple[str, int, list[int | str]]
) -> bytes:
    graph = helper.make_graph(
        [helper.make_node(op, [name for name, _, _ in inputs], [output[0]])],
        "g",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(*output)],
    )
    return helper.make_model(graph, opset_imports=OPSET).SerializeToString()


X = TensorSpec(name="x", dtype="float32", shape=(None, 4))
IDS = TensorSpec(name="ids", dtype="int64", shape=(None, 3))


# --- load_onnx / read_signature -----------------------------------------------------------------------


@pytest.mark.parametrize("weights_in_inputs", [True, False])
def test_signature_of_matmul_softmax(weights_in_inputs: bool) -> None:
    sig = read_signature(load_onnx(matmul_softmax(weights_in_inputs=weights_in_inputs)))
    # The initializer W is a weight, never an input, whether or not it is listed among graph inputs.
    assert sig.inputs == (TensorSpec("x", "float32", (None, 4)),)
    assert sig.outputs == (TensorSpec("y", "float32", (None, 3)),)
    assert sig.key == "x:float32:4"


def test_fixed_batch_dimension_is_kept() -> None:
    sig = read_signature(load_onnx(matmul_softmax(batch=2)))
    assert sig.inputs[0].shape == (2, 4)


def test_several_inputs_and_dtypes() -> None:
    model = single_op(
        "Add",
        [("a", TensorProto.INT64, ["N", "K"]), ("b", TensorProto.INT64, ["N", "K"])],
        ("c", TensorProto.INT64, ["N", "K"]),
    )
    sig = read_signature(load_onnx(model))
    assert [t.name for t in sig.inputs] == ["a", "b"]
    assert sig.inputs[0] == TensorSpec("a", "int64", (None, None))
    assert sig.key == "a:int64:?|b:int64:?"


def test_garbage_bytes_are_invalid_model() -> None:
    with pytest.raises(InvalidModel) as info:
        load_onnx(b"\xff\x00definitely not protobuf\x13\x37" * 10)
    assert info.value.status == 422
    assert info.value.code == "invalid_model"
    assert isinstance(info.value, InvalidInput)


def test_empty_graph_is_invalid_model() -> None:
    graph = helper.make_graph([], "empty", [], [])
    with pytest.raises(InvalidModel, match="empty graph"):
        load_onnx(helper.make_model(graph, opset_imports=OPSET).SerializeToString())


def test_empty_bytes_are_invalid_model() -> None:
    # An empty protobuf parses as an empty ModelProto: the graph check must catch it.
    with pytest.raises(InvalidModel):
        load_onnx(b"")


def test_graph_failing_the_checker_is_invalid_model() -> None:
    graph = helper.make_graph(
        [helper.make_node("Relu", ["undefined"], ["y"])],
        "broken",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])],
    )
    with pytest.raises(InvalidModel, match="checker") as info:
        load_onnx(helper.make_model(graph, opset_imports=OPSET).SerializeToString())
    assert info.value.status == 422
    assert "reason" in info.value.details


def test_scalar_input_is_invalid_model() -> None:
    model = single_op("Relu", [("x", TensorProto.FLOAT, [])], ("y", TensorProto.FLOAT, []))
    with pytest.raises(InvalidModel) as info:
        read_signature(load_onnx(model))
    assert info.value.details["tensor"] == "x"


def test_unserved_element_type_is_invalid_model() -> None:
    model = single_op("Identity", [("s", TensorProto.STRING, ["N"])], ("t", TensorProto.STRING, ["N"]))
    with pytest.raises(InvalidModel) as info:
        read_signature(load_onnx(model))
    assert info.value.details["tensor"] == "s"


# --- Signature ----------------------------------------------------------------------------------------


def test_signature_key_equal_for_equal_inputs_whatever_the_outputs() -> None:
    a = Signature(inputs=(X,), outputs=(TensorSpec("y", "float32", (None, 3)),))
    b = Signature(inputs=(X,), outputs=(TensorSpec("probs", "float64", (None, 10)),))
    # The batch dimension is not part of the key: a fixed batch accepts the same rows.
    c = Signature(inputs=(TensorSpec("x", "float32", (8, 4)),), outputs=())
    assert a.key == b.key == c.key == "x:float32:4"


@pytest.mark.parametrize(
    "other",
    [
        TensorSpec("input", "float32", (None, 4)),  # name
        TensorSpec("x", "float64", (None, 4)),  # dtype
        TensorSpec("x", "float32", (None, 5)),  # inner dim
        TensorSpec("x", "float32", (None, None)),  # dynamic inner dim
        TensorSpec("x", "float32", (None, 2, 2)),  # rank
    ],
)
def test_signature_key_differs_for_different_inputs(other: TensorSpec) -> None:
    assert Signature(inputs=(X,), outputs=()).key != Signature(inputs=(other,), outputs=()).key


def test_signature_json_round_trip() -> None:
    sig = Signature(
        inputs=(X, TensorSpec("mask", "bool", (None, None, 7))),
        outputs=(TensorSpec("y", "float32", (None, 3)),),
    )
    data = sig.to_json()
    assert data["inputs"][1] == {"name": "mask", "dtype": "bool", "shape": [None, None, 7]}
    assert Signature.from_json(data) == sig
    assert Signature.from_json(data).key == sig.key == "x:float32:4|mask:bool:?x7"


# --- coerce_batch / check_array -----------------------------------------------------------------------


def test_ints_are_accepted_for_float_inputs() -> None:
    out = coerce_batch([[1, 2, 3, 4], [5, 6, 7, 8]], X, max_rows=8)
    assert out.dtype == np.float32
    assert out.shape == (2, 4)
    assert out.flags.c_contiguous
    np.testing.assert_array_equal(out, np.arange(1, 9, dtype=np.float32).reshape(2, 4))


def test_floats_are_accepted_for_float_inputs() -> None:
    out = coerce_batch([[0.5, -1.25, 2.0, 3.0]], X, max_rows=8)
    np.testing.assert_array_equal(out, np.array([[0.5, -1.25, 2.0, 3.0]], dtype=np.float32))


def test_ints_are_accepted_for_int_inputs() -> None:
    out = coerce_batch([[1, 2, 3]], IDS, max_rows=8)
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, [[1, 2, 3]])


def test_floats_are_refused_for_int_inputs() -> None:
    with pytest.raises(InvalidInput) as info:
        coerce_batch([[1.5, 2.0, 3.0]], IDS, max_rows=8)
    assert info.value.details == {
        "input": "ids",
        "expected_dtype": "int64",
        "got_dtype": "float64",
    }


def test_strings_are_refused_for_float_inputs() -> None:
    with pytest.raises(InvalidInput) as info:
        coerce_batch([["a", "b", "c", "d"]], X, max_rows=8)
    assert info.value.details["input"] == "x"


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ([1.0, 2.0, 3.0, 4.0], "shape"),  # rank 1: a row, not a batch
        ([[[1.0, 2.0, 3.0, 4.0]]], "shape"),  # rank 3
        ([[1.0, 2.0, 3.0]], "shape"),  # inner dim 3, not 4
        ([[1.0, 2.0, 3.0, 4.0], [1.0, 2.0]], "ragged"),
        ([], "non-empty"),
        ({"x": [[1.0, 2.0, 3.0, 4.0]]}, "non-empty list"),
        (3.0, "non-empty list"),
        ([[1.0, 2.0, 3.0, 4.0]] * 9, "at most 8"),
        ([[1.0, float("nan"), 3.0, 4.0]], "NaN"),
        ([[1.0, float("inf"), 3.0, 4.0]], "infinite"),
    ],
)
def test_bad_batches_are_invalid_input_naming_the_input(raw: object, fragment: str) -> None:
    with pytest.raises(InvalidInput, match=fragment) as info:
        coerce_batch(raw, X, max_rows=8)
    assert info.value.status == 422
    assert info.value.details["input"] == "x"


def test_wrong_shape_details_name_expected_and_got() -> None:
    with pytest.raises(InvalidInput) as info:
        coerce_batch([[1.0, 2.0, 3.0]], X, max_rows=8)
    assert info.value.details["expected_shape"] == [None, 4]
    assert info.value.details["got_shape"] == [1, 3]


def test_dynamic_inner_dimension_accepts_any_size() -> None:
    spec = TensorSpec("x", "float32", (None, None))
    assert coerce_batch([[1, 2]], spec, max_rows=4).shape == (1, 2)
    assert coerce_batch([[1, 2, 3, 4, 5]], spec, max_rows=4).shape == (1, 5)


def test_max_rows_is_inclusive() -> None:
    assert coerce_batch([[0, 0, 0, 0]] * 8, X, max_rows=8).shape == (8, 4)


def test_check_array_returns_contiguous_array_of_spec_dtype() -> None:
    strided = np.arange(32, dtype=np.float64).reshape(4, 8)[:, ::2]  # (4, 4), not contiguous
    assert not strided.flags.c_contiguous
    out = check_array(strided, X, max_rows=8)
    assert out.dtype == np.float32
    assert out.flags.c_contiguous
    np.testing.assert_array_equal(out, strided.astype(np.float32))


def test_check_array_refuses_zero_rows() -> None:
    with pytest.raises(InvalidInput) as info:
        check_array(np.zeros((0, 4), dtype=np.float32), X, max_rows=8)
    assert info.value.details["input"] == "x"


def test_bool_input_accepts_bools_only() -> None:
    spec = TensorSpec("mask", "bool", (None, 2))
    out = coerce_batch([[True, False]], spec, max_rows=4)
    assert out.dtype == np.bool_
    with pytest.raises(InvalidInput):
        coerce_batch([[1, 0]], spec, max_rows=4)


# --- conversions that must be exact -------------------------------------------------------------------


def test_uint8_input_accepts_json_integers_in_range() -> None:
    # JSON integers always parse as int64; a uint8 model (images) must still accept 0..255.
    spec = TensorSpec("pixels", "uint8", (None, 3))
    out = coerce_batch([[0, 128, 255]], spec, max_rows=4)
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(out, [[0, 128, 255]])


@pytest.mark.parametrize(
    ("dtype", "value"),
    [("int8", 200), ("int8", -129), ("uint8", 256), ("uint8", -1), ("int32", 2**40)],
)
def test_integers_out_of_range_of_the_input_dtype_are_refused(dtype: str, value: int) -> None:
    # A silent wrap-around (200 -> -56 as int8) would answer a different query than the one asked.
    spec = TensorSpec("n", dtype, (None, 1))
    with pytest.raises(InvalidInput) as info:
        coerce_batch([[value]], spec, max_rows=4)
    assert info.value.details["input"] == "n"


def test_float_overflowing_the_input_dtype_is_refused() -> None:
    # 1e39 is finite as float64 but becomes inf as float32: the model must never see it.
    with pytest.raises(InvalidInput) as info:
        coerce_batch([[1e39, 0.0, 0.0, 0.0]], X, max_rows=8)
    assert info.value.details["input"] == "x"


# The range of a float input: small batches are checked over the JSON numbers (`_small_within`), large
# ones and those the small check cannot clear by NumPy's exact reductions; both must agree.
_BIG = SMALL_CHECK_MAX + 4  # values: past the small check


@pytest.mark.parametrize("cols", [4, _BIG], ids=["small", "large"])
@pytest.mark.parametrize(
    ("dtype", "value", "ok"),
    [
        ("float32", 3.4e38, True),  # within float32
        ("float32", -3.4e38, True),
        ("float32", 1e39, False),  # finite as float64, infinite as float32
        ("float32", -1e39, False),
        ("float16", 65504.0, True),
        ("float16", 65520.0, False),
        ("float64", 1.7e308, True),
        ("float32", float("nan"), False),  # not from JSON (orjson refuses them), but never let through
        ("float32", float("inf"), False),
        ("float64", float("-inf"), False),
    ],
)
def test_float_range_is_checked_alike_for_small_and_large_batches(
    cols: int, dtype: str, value: float, ok: bool
) -> None:
    spec = TensorSpec(name="x", dtype=dtype, shape=(None, cols))
    row = [0.5] * cols
    row[cols // 2] = value
    if ok:
        out = coerce_batch([row], spec, max_rows=4)
        assert out.dtype == np.dtype(dtype)
        assert out[0, cols // 2] == np.asarray(value, dtype=dtype)
    else:
        with pytest.raises(InvalidInput, match="NaN, infinite or out-of-range"):
            coerce_batch([row], spec, max_rows=4)


def test_many_large_values_each_within_range_are_accepted() -> None:
    """Their magnitudes sum past float32's largest value: the small check cannot clear them, the exact
    one does."""
    spec = TensorSpec(name="x", dtype="float32", shape=(None, 4))
    out = coerce_batch([[3e38, -3e38, 3e38, 3e38]], spec, max_rows=4)
    assert out.dtype == np.float32 and np.isfinite(out).all()


def test_one_dimensional_float_batches_are_range_checked() -> None:
    spec = TensorSpec(name="x", dtype="float32", shape=(None,))
    assert coerce_batch([1.0, 2, True], spec, max_rows=4).tolist() == [1.0, 2.0, 1.0]
    with pytest.raises(InvalidInput):
        coerce_batch([1.0, 1e39], spec, max_rows=4)
