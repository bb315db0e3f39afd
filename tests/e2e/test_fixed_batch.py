"""A model exported the way most people first export one — `torch.onnx.export` with no `dynamic_axes`, so
its batch of 1 is fixed in the graph — is registered, profiled into batching variants and answers
queries of several rows through the whole suite, each row as the uploaded graph answers it alone.

The model is unlike the demo models: a small CNN over a named 4-D input `image` (1 × 8 × 8 digits) with
its output named `scores`, trained here on scikit-learn's digits in about a second."""

from __future__ import annotations

import io
import warnings

import numpy as np
import onnxruntime as ort
import orjson
import pytest
import torch
from sklearn.datasets import load_digits

from tests.e2e.conftest import RunningSuite

APP = "fixedbatch"
NAME = "fixed-batch-cnn"


def fixed_batch_cnn() -> tuple[bytes, bytes, np.ndarray]:
    """(the ONNX export with batch 1 fixed, the validation `.npz`, the images for queries)."""
    x, y = load_digits(return_X_y=True)
    images = (x / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(1, 4, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.Flatten(),
        torch.nn.Linear(4 * 8 * 8, 10),
    )
    optimizer = torch.optim.Adam(net.parameters(), lr=0.01)
    inputs, labels = torch.from_numpy(images[:1200]), torch.from_numpy(y[:1200])
    for _ in range(60):
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(net(inputs), labels).backward()  # type: ignore[no-untyped-call]
        optimizer.step()
    buffer = io.BytesIO()
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore", DeprecationWarning)  # the legacy exporter, as users call it
        torch.onnx.export(
            net.eval(),
            (torch.zeros(1, 1, 8, 8),),
            buffer,  # type: ignore[arg-type]  # typed as a path; a file object works
            input_names=["image"],
            output_names=["scores"],
            dynamo=False,
        )
    validation = io.BytesIO()
    np.savez(validation, x=images[1200:1500], y=y[1200:1500].astype(np.int64))
    return buffer.getvalue(), validation.getvalue(), images[1500:]


@pytest.fixture(scope="module")
def cnn(running: RunningSuite) -> tuple[str, bytes, np.ndarray]:
    created = running.admin.post("/v1/apps", json={"name": APP})
    assert created.status_code == 201, created.text
    key = str(created.json()["api_key"])
    model, validation, images = fixed_batch_cnn()
    with running.client(key) as client:
        answer = client.post(
            "/v1/models",
            files={"file": ("cnn.onnx", model), "validation": ("cnn.npz", validation)},
            data={"metadata": orjson.dumps({"name": NAME, "app": APP, "task": "classification"}).decode()},
        )
    assert answer.status_code == 202, answer.text
    return key, model, images


def test_a_model_with_its_batch_fixed_at_one_serves_batches(
    running: RunningSuite, cnn: tuple[str, bytes, np.ndarray]
) -> None:
    key, uploaded, images = cnn
    as_uploaded = ort.InferenceSession(uploaded, providers=["CPUExecutionProvider"])
    with pytest.raises(Exception, match="invalid dimensions"):
        as_uploaded.run(None, {"image": images[:2]})  # the upload alone refuses two rows

    model = running.wait_ready(NAME, timeout_s=300)
    assert model["status"] == "ready", model
    signature = model["signature"]
    assert isinstance(signature, dict)
    assert signature["inputs"] == [{"name": "image", "dtype": "float32", "shape": [None, 1, 8, 8]}]
    ready = running.admin.get(f"/v1/models/{NAME}/variants", params={"status": "ready"}).json()
    variants = ready["variants"] if isinstance(ready, dict) else ready
    assert max(int(v["max_batch"]) for v in variants) > 1, variants

    rows = images[:5]
    expected = np.concatenate(
        [as_uploaded.run(None, {"image": rows[i : i + 1]})[0] for i in range(len(rows))]
    )
    with running.client(key) as client:
        answer = client.post(f"/v1/models/{NAME}/infer", json={"inputs": rows.tolist()})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    got = np.asarray(body["outputs"]["scores"], dtype=np.float32)
    assert got.shape == (5, 10)
    # a non-lossy app: the answer comes from a variant as accurate as the upload (fp32 forms)
    np.testing.assert_allclose(got, expected, rtol=1e-3, atol=1e-3)
    assert (got.argmax(axis=1) == expected.argmax(axis=1)).all()
