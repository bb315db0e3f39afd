"""A model deleted and registered again under its name with other weights: the common way to update a
model. Its variant ids are the same as before, so every place that knew the old ones must not answer
with the old weights: not the prediction cache, not the instances still loaded on the executors. Nor the
executors' offline sessions, which offline jobs run on. The old instances go at a heartbeat, and the
deletion is an event."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import orjson
from onnx import numpy_helper

from tests.e2e.conftest import RunningSuite
from tests.e2e.jobs.helpers import wait_for as wait_job
from tests.e2e.wine import CHEM, wine_body, wine_model, wine_rows
from tests.polling import wait_for

APP = "wine-updates"
NAME = "wine-updated"


def _reversed(model: bytes) -> bytes:
    """The same graph with its three classes' weights in reverse order: every answer differs."""
    proto = onnx.load_model_from_string(model)
    for init in proto.graph.initializer:
        array = numpy_helper.to_array(init)
        flipped = array[:, ::-1] if array.ndim == 2 else array[::-1]
        init.CopyFrom(numpy_helper.from_array(np.ascontiguousarray(flipped), init.name))
    return proto.SerializeToString()


def _logits(model: bytes, rows: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    return np.asarray(session.run(None, {"chem": rows[:, :CHEM], "color": rows[:, CHEM:]})[0])


def _loaded(running: RunningSuite, variants: set[str]) -> set[str]:
    workers = running.admin.get("/v1/workers").json()
    return {vid for w in workers for vid in w["instances"] if vid in variants}


def test_a_model_registered_again_answers_with_its_new_weights(running: RunningSuite, tmp_path: Path) -> None:
    created = running.admin.post("/v1/apps", json={"name": APP})
    assert created.status_code == 201, created.text
    key = str(created.json()["api_key"])
    onnx_path, npz_path = wine_model(tmp_path)
    first = onnx_path.read_bytes()
    second = _reversed(first)
    rows = wine_rows(6, seed=31)

    def register(model: bytes) -> None:
        metadata = orjson.dumps({"name": NAME, "app": APP, "task": "classification"}).decode()
        files = {"file": ("m.onnx", model), "validation": ("v.npz", npz_path.read_bytes())}
        with running.client(key) as client:
            answer = client.post("/v1/models", files=files, data={"metadata": metadata})
        assert answer.status_code == 202, answer.text
        assert running.wait_ready(NAME, timeout_s=300)["status"] == "ready"

    def job(model: bytes) -> None:
        """An offline job over the rows: run by the executors' offline sessions, not the instances."""
        buffer = io.BytesIO()
        np.savez(buffer, chem=rows[:, :CHEM], color=rows[:, CHEM:])
        with running.client(key) as client:
            accepted = client.post(
                "/v1/jobs",
                files={"input": ("in.npz", buffer.getvalue(), "application/octet-stream")},
                data={"metadata": orjson.dumps({"model": NAME, "chunk_rows": 3}).decode()},
            )
            assert accepted.status_code == 202, accepted.text
            done = wait_job(
                client, accepted.json()["id"], until=lambda j: j["state"] in ("succeeded", "failed")
            )
            assert done["state"] == "succeeded", done
            result = client.get(f"/v1/jobs/{done['id']}/result")
        with np.load(io.BytesIO(result.content), allow_pickle=False) as archive:
            got = archive[archive.files[0]]
        # the job may run an int8 form as accurate as the model: its answers, not exactly its logits
        expected = _logits(model, rows)
        np.testing.assert_array_equal(got.argmax(1), expected.argmax(1))
        np.testing.assert_allclose(got, expected, atol=0.1)

    def ask(i: int) -> dict[str, object]:
        with running.client(key) as client:
            answer = client.post(
                f"/v1/models/{NAME}/infer",
                content=wine_body(rows[i]),
                headers={"content-type": "application/json"},
            )
        assert answer.status_code == 200, answer.text
        body: dict[str, object] = answer.json()
        return body

    register(first)
    before = [ask(i) for i in range(3)]  # computed, and now in the prediction cache
    old = _logits(first, rows)
    for i, body in enumerate(before):
        np.testing.assert_allclose(body["outputs"]["logits"][0], old[i], atol=1e-4)  # type: ignore[index]
    job(first)
    served = {str(b["variant"]) for b in before}
    assert _loaded(running, served), "the variant that answered is loaded somewhere"

    assert running.admin.delete(f"/v1/models/{NAME}").status_code == 204
    wait_for(
        lambda: not _loaded(running, served), what="the deleted model's instances unloaded", timeout_s=30
    )
    events = running.admin.get("/v1/events", params={"kind": "registry", "action": "delete"}).json()
    mine = [e for e in (events["events"] if isinstance(events, dict) else events) if e["model"] == NAME]
    assert mine and "deleted" in mine[0]["reason"], events

    register(second)
    new = _logits(second, rows)
    assert not np.allclose(new[:3], old[:3])
    for i in range(6):  # the same rows as before (a cache would know them) and new ones
        body = ask(i)
        np.testing.assert_allclose(body["outputs"]["logits"][0], new[i], atol=1e-4)  # type: ignore[index]
    job(second)
