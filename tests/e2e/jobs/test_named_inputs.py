"""A job on a model whose inputs are not called `x`, and are two: the wine model (`chem`, `color`). Every
chunk used to be refused ("takes inputs ['x']"): the variants' records did not carry the model's own
input names. The output equals ONNX Runtime run directly on the chosen variant."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import onnxruntime as ort
import orjson
import pytest

from tests.e2e.jobs.helpers import JobsSuite, wait_for
from tests.e2e.wine import CHEM, register_wine
from tests.polling import wait_for as poll

pytestmark = pytest.mark.e2e

WINE = "wine-jobs"


def test_a_job_on_a_two_input_model_with_its_own_input_names(jobs_suite: JobsSuite, tmp_path: Path) -> None:
    with jobs_suite.client() as client:
        registered = register_wine(client, tmp_path, app="batch", name=WINE)
        assert registered.status_code == 202, registered.text
        poll(
            lambda: client.get(f"/v1/models/{WINE}").json()["status"] == "ready",
            what="profiled",
            timeout_s=180,
        )

        data = np.load(tmp_path / "wine.npz")
        rng = np.random.default_rng(3)
        picks = rng.integers(0, len(data["y"]), size=1500)
        chem, color = data["chem"][picks], data["color"][picks]
        buffer = io.BytesIO()
        np.savez(buffer, chem=chem, color=color)
        accepted = client.post(
            "/v1/jobs",
            files={"input": ("input.npz", buffer.getvalue(), "application/octet-stream")},
            data={"metadata": orjson.dumps({"model": WINE, "chunk_rows": 500}).decode()},
        )
        assert accepted.status_code == 202, accepted.text
        done = wait_for(client, accepted.json()["id"], until=lambda j: j["state"] in ("succeeded", "failed"))
        assert done["state"] == "succeeded", done
        result = client.get(f"/v1/jobs/{done['id']}/result")
        variants = client.get(f"/v1/models/{WINE}/variants", params={"include_dominated": True}).json()
    with np.load(io.BytesIO(result.content), allow_pickle=False) as archive:
        got = archive[archive.files[0]]
    variant = next(v for v in variants if v["id"] == done["variant"])
    digest = variant["artifact_digest"]
    session = ort.InferenceSession(
        str(jobs_suite.settings.resolved_artifact_dir / digest[:2] / digest),
        providers=["CPUExecutionProvider"],
    )
    step, chunk = variant["max_batch"], done["chunk_rows"]  # batched as the job runs it
    runs = [
        session.run(
            None, {"chem": chem[a : min(a + step, c + chunk)], "color": color[a : min(a + step, c + chunk)]}
        )[0]
        for c in range(0, len(chem), chunk)
        for a in range(c, min(c + chunk, len(chem)), step)
    ]
    assert got.shape == (len(chem), 3)
    np.testing.assert_allclose(got, np.concatenate(runs), rtol=1e-4, atol=1e-5)
    assert chem.shape[1] == CHEM
