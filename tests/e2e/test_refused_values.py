"""Through the whole suite: a query whose values the model refuses (a token id past the embedding's table,
which the gateway's shape and dtype checks cannot see) is a 422 naming the refusal, never a 503 about
the worker, and the queries that share its batch are answered as if it had not been there."""

from __future__ import annotations

import asyncio

import httpx
import numpy as np
import onnxruntime as ort
import orjson
import pytest

from tests.e2e.conftest import RunningSuite
from tests.tokens import model_bytes, tokens, validation_bytes

APP = "refusals"
NAME = "tokens"


@pytest.fixture(scope="module")
def key(running: RunningSuite) -> str:
    created = running.admin.post("/v1/apps", json={"name": APP})
    assert created.status_code == 201, created.text
    app_key = str(created.json()["api_key"])
    with running.client(app_key) as client:
        answer = client.post(
            "/v1/models",
            files={"file": ("tokens.onnx", model_bytes()), "validation": ("tokens.npz", validation_bytes())},
            data={"metadata": orjson.dumps({"name": NAME, "app": APP, "task": "classification"}).decode()},
        )
    assert answer.status_code == 202, answer.text
    assert running.wait_ready(NAME, timeout_s=300)["status"] == "ready"
    return app_key


def test_a_refused_value_is_a_422_and_its_batch_mates_are_answered(running: RunningSuite, key: str) -> None:
    x = tokens()
    bad = x[:1].copy()
    bad[0, 3] = 99_999_999
    reference = ort.InferenceSession(model_bytes())

    with running.client(key) as client:
        refused = client.post(f"/v1/models/{NAME}/infer", json={"inputs": bad.tolist()})
        assert refused.status_code == 422, refused.text
        error = refused.json()["error"]
        assert error["code"] == "invalid_input" and "refused" in error["message"]
        assert "out of data bounds" in error["reason"] and error["variant"].startswith(f"{NAME}.")

    async def burst() -> list[httpx.Response]:
        async with httpx.AsyncClient(
            base_url=running.url, headers={"Authorization": f"Bearer {key}"}, timeout=60
        ) as client:
            bodies = [{"inputs": (bad if i == 7 else x[i : i + 1]).tolist()} for i in range(24)]
            return await asyncio.gather(*(client.post(f"/v1/models/{NAME}/infer", json=b) for b in bodies))

    answers = asyncio.run(burst())
    for i, answer in enumerate(answers):
        if i == 7:
            assert answer.status_code == 422, answer.text
            continue
        assert answer.status_code == 200, (i, answer.text)
        (want,) = reference.run(None, {"token_ids": x[i : i + 1]})
        body = answer.json()
        # a non-lossy app may be answered by an int8 form as accurate as the upload: its logits move a little
        tight = "fp32" in body["variant"]
        np.testing.assert_allclose(
            body["outputs"]["logits"], want, rtol=1e-4 if tight else 0.05, atol=1e-5 if tight else 0.25
        )
