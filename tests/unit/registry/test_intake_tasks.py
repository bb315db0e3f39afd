"""What registration accepts per task (services/registry/intake/checks.py): a regression model's targets and
output shape, constant targets refused, classification unchanged, unknown tasks named."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from infaas.core.errors import InvalidInput, InvalidModel
from infaas.wire.tensors import Signature, TensorSpec
from services.registry.intake.checks import check_output, check_upload, load_validation
from tests.diabetes import diabetes_models

SIG = Signature(inputs=(TensorSpec("x", "float32", (None, 2)),), outputs=())
X = np.arange(8, dtype=np.float32).reshape(4, 2)


def npz(**arrays: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


@pytest.mark.parametrize(
    "y",
    [
        np.array([0.5, 1.5, 2.0, -3.0]),
        np.array([1, 2, 3, 4], dtype=np.int64),
        np.array([[0.5, 1.0], [1.5, 1.0], [2.0, 1.0], [-3.0, 1.0]], dtype=np.float32),
    ],
)
def test_regression_targets_of_one_or_two_dimensions_are_accepted(y: np.ndarray) -> None:
    arrays = load_validation(npz(x=X, y=y), SIG, task="regression")
    assert np.array_equal(arrays["y"], y)


@pytest.mark.parametrize(
    ("y", "message"),
    [
        (np.full(4, 2.5), "constant"),
        (np.ones((4, 3)), "constant"),
        (np.array([0.5, np.nan, 2.0, 1.0]), "finite"),
        (np.array([0.5, np.inf, 2.0, 1.0]), "finite"),
        (np.zeros((4, 2, 2)), "shape"),
        (np.zeros((4, 0)), "shape"),
        (np.array([True, False, True, False]), "numeric"),
    ],
)
def test_bad_regression_targets_are_a_422(y: np.ndarray, message: str) -> None:
    with pytest.raises(InvalidInput, match=message) as info:
        load_validation(npz(x=X, y=y), SIG, task="regression")
    assert info.value.status == 422


def test_classification_still_needs_integer_class_ids() -> None:
    with pytest.raises(InvalidInput, match="integer class ids"):
        load_validation(npz(x=X, y=np.array([0.5, 1.5, 2.0, -3.0])), SIG, task="classification")
    assert load_validation(npz(x=X, y=np.arange(4)), SIG)["y"].dtype.kind == "i"


@pytest.mark.parametrize(
    ("shape", "y_shape", "ok"),
    [
        ((2,), (4,), True),
        ((2, 1), (4,), True),
        ((2, 1), (4, 1), True),
        ((2,), (4, 1), True),
        ((2, 3), (4, 3), True),
        ((2, 2), (4,), False),
        ((2, 3), (4, 2), False),
        ((2, 1, 1), (4,), False),
        ((1,), (4,), False),
    ],
)
def test_a_regression_output_has_as_many_targets_per_row_as_y(
    shape: tuple[int, ...], y_shape: tuple[int, ...], ok: bool
) -> None:
    y = np.zeros(y_shape)
    if ok:
        check_output(shape, y, task="regression")
    else:
        with pytest.raises(InvalidModel, match="regression model must output"):
            check_output(shape, y, task="regression")


def test_a_classifier_output_must_be_batch_by_classes() -> None:
    check_output((2, 3), np.zeros(4, dtype=np.int64), task="classification")
    with pytest.raises(InvalidModel, match="classification model must output"):
        check_output((2,), np.zeros(4, dtype=np.int64), task="classification")


def test_check_upload_takes_a_regression_onnx_model_and_refuses_it_as_a_classifier(tmp_path: Path) -> None:
    onnx_path, npz_path = diabetes_models(tmp_path)["diabetes"]
    checked = check_upload(onnx_path.read_bytes(), npz_path.read_bytes(), "regression")
    assert checked.signature.outputs[0].shape == (None, 1) and checked.rows == 142
    with pytest.raises(InvalidInput, match="integer class ids"):
        check_upload(onnx_path.read_bytes(), npz_path.read_bytes(), "classification")
    clf_onnx, clf_npz = diabetes_models(tmp_path)["diabetes-high"]
    with pytest.raises(InvalidModel, match="regression model must output"):
        check_upload(clf_onnx.read_bytes(), npz_path.read_bytes(), "regression")


def test_an_unknown_task_is_a_422_naming_the_supported_ones() -> None:
    with pytest.raises(InvalidInput, match="'classification', 'regression'") as info:
        check_upload(b"", b"", "ranking")
    assert info.value.status == 422
