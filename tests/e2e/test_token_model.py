"""A PyTorch model unlike the demo's through the whole suite: TorchScript, two inputs named by its
forward (`ids`, int64 token ids, and `mask`, float), a tuple of two outputs. Registered, profiled into
ONNX Runtime and TorchScript variants, and queried by name: every output answered under its name, as
the module computes it; token ids past its vocabulary refused as the caller's error."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import orjson
import pytest
import torch

from tests.e2e.conftest import RunningSuite
from tests.token_model import VOCAB, TokenModel, accuracy, token_model, token_rows

APP = "token-reader"
NAME = "token-bag"


@pytest.fixture(scope="module")
def tokens(running: RunningSuite, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, TokenModel]:
    created = running.admin.post("/v1/apps", json={"name": APP})
    assert created.status_code == 201, created.text
    key = str(created.json()["api_key"])
    model = token_model(tmp_path_factory.mktemp("token-model"))
    with running.client(key) as client:
        answer = client.post(
            "/v1/models",
            files={
                "file": ("tokens.pt", model.torchscript.read_bytes()),
                "validation": ("v.npz", model.validation.read_bytes()),
            },
            data={"metadata": orjson.dumps({"name": NAME, "app": APP, "task": "classification"}).decode()},
        )
    assert answer.status_code == 202, answer.text
    assert answer.json()["format"] == "torchscript"
    return key, model


def test_a_two_input_torchscript_model_answers_every_output_by_name(
    running: RunningSuite, tokens: tuple[str, TokenModel]
) -> None:
    key, model = tokens
    registered = running.wait_ready(NAME, timeout_s=300)
    assert registered["status"] == "ready", registered
    signature = registered["signature"]
    assert isinstance(signature, dict)
    assert signature["inputs"] == [
        {"name": "ids", "dtype": "int64", "shape": [None, 64]},
        {"name": "mask", "dtype": "float32", "shape": [None, 64]},
    ]
    assert [o["name"] for o in signature["outputs"]] == ["output_0", "output_1"]
    ready = running.admin.get(f"/v1/models/{NAME}/variants", params={"status": "ready"}).json()
    variants = ready["variants"] if isinstance(ready, dict) else ready
    assert {v["runtime"] for v in variants} == {"onnxruntime", "torchscript"}, variants
    fp32 = [v for v in variants if v["precision"] == "fp32"]
    assert all(
        v["accuracy"] == pytest.approx(accuracy(model.module, model.validation), abs=1e-6) for v in fp32
    )

    ids, mask, _ = token_rows(seed=7)  # other rows, other padding than the validation set's
    rows = slice(0, 6)
    with torch.inference_mode():
        logits, pooled = model.module(torch.from_numpy(ids[rows]), torch.from_numpy(mask[rows]))
    body = {"inputs": {"ids": ids[rows].tolist(), "mask": mask[rows].tolist()}}
    with running.client(key) as client:
        answer = client.post(f"/v1/models/{NAME}/infer", json=body)
    assert answer.status_code == 200, answer.text
    got = answer.json()
    assert got["variant"]  # which variant answered is said
    scores = np.asarray(got["outputs"]["output_0"], dtype=np.float32)
    assert scores.shape == (6, 10)
    # a non-lossy app: an fp32 form, or one exactly as accurate on the validation set, answered
    assert (scores.argmax(1) == logits.numpy().argmax(1)).mean() >= 5 / 6
    np.testing.assert_allclose(np.asarray(got["outputs"]["output_1"]).shape, (6, 24))
    if "fp32" in str(got["variant"]):
        np.testing.assert_allclose(scores, logits.numpy(), atol=1e-4)
        np.testing.assert_allclose(np.asarray(got["outputs"]["output_1"]), pooled.numpy(), atol=1e-4)


def test_token_ids_the_model_refuses_are_the_callers_error(
    running: RunningSuite, tokens: tuple[str, TokenModel]
) -> None:
    key, _ = tokens
    assert running.wait_ready(NAME, timeout_s=300)["status"] == "ready"
    ids, mask, _ = token_rows()
    bad = ids[:2].copy()
    bad[1, 3] = VOCAB + 1000  # past the embedding's table: only the model can tell
    with running.client(key) as client:
        past = client.post(
            f"/v1/models/{NAME}/infer", json={"inputs": {"ids": bad.tolist(), "mask": mask[:2].tolist()}}
        )
        fractional = client.post(
            f"/v1/models/{NAME}/infer",
            json={"inputs": {"ids": (ids[:2] + 0.5).tolist(), "mask": mask[:2].tolist()}},
        )
        missing = client.post(f"/v1/models/{NAME}/infer", json={"inputs": {"ids": ids[:2].tolist()}})
        fine = client.post(
            f"/v1/models/{NAME}/infer", json={"inputs": {"ids": ids[:2].tolist(), "mask": mask[:2].tolist()}}
        )
    assert past.status_code == 422, past.text
    assert "refused" in past.text
    ready = running.admin.get(f"/v1/models/{NAME}/variants", params={"status": "ready"}).json()
    variants = ready["variants"] if isinstance(ready, dict) else ready
    scripted = next(str(v["id"]) for v in variants if v["runtime"] == "torchscript")
    with running.client(key) as client:  # TorchScript says it in its own words: the same 422
        pinned = {"ids": bad.tolist(), "mask": mask[:2].tolist()}
        past_scripted = client.post(f"/v1/models/{NAME}/infer", json={"inputs": pinned, "variant": scripted})
    assert past_scripted.status_code == 422, past_scripted.text
    assert "index out of range" in past_scripted.text
    assert fractional.status_code == 422, fractional.text
    assert missing.status_code == 422, missing.text
    assert "mask" in missing.text
    assert fine.status_code == 200, fine.text  # nothing left broken behind the refusals


def test_the_validation_set_names_the_inputs_it_lacks(
    running: RunningSuite, tokens: tuple[str, TokenModel], tmp_path: Path
) -> None:
    key, model = tokens
    data = np.load(model.validation)
    np.savez(tmp_path / "v.npz", x=data["ids"], y=data["y"])
    with running.client(key) as client:
        answer = client.post(
            "/v1/models",
            files={
                "file": ("t.pt", model.torchscript.read_bytes()),
                "validation": ("v.npz", (tmp_path / "v.npz").read_bytes()),
            },
            data={
                "metadata": orjson.dumps(
                    {"name": "token-bag-x", "app": APP, "task": "classification"}
                ).decode()
            },
        )
    assert answer.status_code == 422, answer.text
    assert "'ids'" in answer.text
    assert running.admin.get("/v1/models/token-bag-x").status_code == 404  # nothing left behind
