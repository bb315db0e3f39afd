"""A regression model's accuracy: R² over all targets, clipped to [0, 1]
(services/profiler/profiling.py), measured on a real ONNX Runtime session."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from infaas.runtimes.onnx_runtime import OnnxRuntime
from services.profiler.profiling import measure_accuracy, r2_accuracy
from tests.diabetes import diabetes_models, r2


def test_r2_matches_its_definition_over_all_targets() -> None:
    rng = np.random.default_rng(3)
    y = rng.normal(size=(50, 2)) * [1.0, 10.0]
    pred = y + rng.normal(scale=0.5, size=y.shape)
    ss_res = ((y - pred) ** 2).sum()
    ss_tot = ((y[:, 0] - y[:, 0].mean()) ** 2).sum() + ((y[:, 1] - y[:, 1].mean()) ** 2).sum()
    assert r2_accuracy(pred, y) == pytest.approx(1 - ss_res / ss_tot)


def test_a_1d_target_fits_a_batch_by_one_prediction() -> None:
    y = np.array([1.0, 2.0, 3.0, 4.0])
    assert r2_accuracy(y[:, None], y) == 1.0
    assert r2_accuracy(np.array([1.0, 2.0, 3.0, 5.0]), y) == pytest.approx(1 - 1 / 5)


def test_r2_is_clipped_to_zero_and_non_finite_predictions_score_zero() -> None:
    y = np.array([1.0, 2.0, 3.0, 4.0])
    assert r2_accuracy(np.full(4, 2.5), y) == 0.0  # the mean: R² is exactly 0
    assert r2_accuracy(-y, y) == 0.0  # worse than the mean: R² < 0, clipped
    assert r2_accuracy(np.array([1.0, np.nan, 3.0, 4.0]), y) == 0.0


def test_mismatched_shapes_and_constant_targets_are_errors() -> None:
    with pytest.raises(ValueError, match="predictions of shape"):
        r2_accuracy(np.zeros((4, 2)), np.arange(4.0))
    with pytest.raises(ValueError, match="constant"):
        r2_accuracy(np.arange(4.0), np.ones(4))


def test_a_sessions_regression_accuracy_is_its_r2_on_the_validation_set(tmp_path: Path) -> None:
    onnx_path, npz_path = diabetes_models(tmp_path)["diabetes"]
    data = np.load(npz_path, allow_pickle=False)
    runtime = OnnxRuntime(onnx_path, threads=1)
    runtime.load()
    try:
        accuracy = measure_accuracy(runtime, {"features": data["x"]}, data["y"], task="regression", chunk=16)
        predictions = runtime.run({"features": data["x"]})["prediction"]
    finally:
        runtime.unload()
    assert 0.3 < accuracy < 1.0
    assert accuracy == pytest.approx(r2(predictions, data["y"]), abs=1e-9)
