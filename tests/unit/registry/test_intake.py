"""The validation set of a model being registered: NaN or infinity in its inputs is refused (an all-NaN
set made every variant score accuracy 1.0)."""

from __future__ import annotations

import io

import numpy as np
import pytest

from infaas.core.errors import InvalidInput
from infaas.wire.tensors import Signature, TensorSpec
from services.registry.intake.checks import load_validation

SIG = Signature(inputs=(TensorSpec("x", "float32", (None, 2)),), outputs=())


def npz(x: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, x=x, y=np.zeros(len(x), dtype=np.int64))
    return buffer.getvalue()


@pytest.mark.parametrize(
    "x",
    [
        np.full((3, 2), np.nan, dtype=np.float32),
        np.array([[0.0, 1.0], [np.inf, 0.0]], dtype=np.float32),
        np.array([[0.0, 1.0], [-np.inf, 0.0]], dtype=np.float64),
        np.array([[0.0, 1.0], [1e300, 0.0]], dtype=np.float64),  # finite, but infinity as float32
    ],
)
def test_validation_inputs_must_be_finite(x: np.ndarray) -> None:
    with pytest.raises(InvalidInput, match="validation inputs must be finite") as info:
        load_validation(npz(x), SIG)
    assert info.value.status == 422 and info.value.details["input"] == "x"


def test_finite_validation_inputs_are_cast_to_the_model_dtype() -> None:
    arrays = load_validation(npz(np.arange(6, dtype=np.float64).reshape(3, 2)), SIG)
    assert arrays["x"].dtype == np.float32 and arrays["y"].shape == (3,)
