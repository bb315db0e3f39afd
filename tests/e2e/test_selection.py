"""Model selection through the whole suite: two wine classifiers of different accuracy (not the demo
models: other data, input and output names; `tests/selection_wine.py`) registered in one app, profiled,
selected among by Exp3, queried one row at a time with the true label fed back after each answer. The
bandit must come to send (almost) every query to the more accurate model, and the gateway's metrics must
count each model's live accuracy."""

from __future__ import annotations

import io
import random
import re
from pathlib import Path

import numpy as np
import orjson

from tests.e2e.conftest import RunningSuite, _settings, own_suite
from tests.polling import wait_for
from tests.selection_wine import STRONG, WEAK, wine_classifier, wine_data, wine_straggler

QUERIES = 150


def test_exp3_learns_the_better_model_from_feedback(running: RunningSuite) -> None:
    created = running.admin.post("/v1/apps", json={"name": "sommelier", "slo_policy": "best_effort"})
    assert created.status_code == 201, created.text
    x, y = wine_data()
    validation = io.BytesIO()
    np.savez(validation, x=x, y=y)
    with running.client(created.json()["api_key"]) as client:
        for name, columns in (("strong", STRONG), ("weak", WEAK)):
            metadata = orjson.dumps({"name": name, "app": "sommelier", "task": "classification"}).decode()
            files = {
                "file": ("m.onnx", wine_classifier(columns)),
                "validation": ("v.npz", validation.getvalue()),
            }
            assert client.post("/v1/models", files=files, data={"metadata": metadata}).status_code == 202
        for name in ("strong", "weak"):
            assert running.wait_ready(name)["status"] == "ready"
        selection = {"policy": "exp3", "models": ["strong", "weak"], "eta": 0.3, "gamma": 0.1}
        patched = client.patch("/v1/apps/sommelier", json={"selection": selection})
        assert patched.status_code == 200, patched.text

        # Every gateway process applies the change within its app cache's TTL (the one that took the PATCH
        # at once): wait until its queries go through the selection.
        def selecting() -> bool:
            return (
                "selection" in client.post("/v1/apps/sommelier/infer", json={"inputs": x[:1].tolist()}).json()
            )

        wait_for(selecting, what="queries through the selection", timeout_s=30)
        rng = random.Random(3)
        chosen, right = [], []
        for _ in range(QUERIES):
            i = rng.randrange(len(y))
            answer = client.post(
                "/v1/apps/sommelier/infer", json={"inputs": x[i : i + 1].tolist(), "user": "ana"}
            )
            assert answer.status_code == 200, answer.text
            doc = answer.json()
            chosen.append(doc["selection"]["chosen"])
            right.append(int(np.argmax(doc["outputs"]["logits"][0])) == int(y[i]))
            fed = client.post(
                "/v1/apps/sommelier/feedback", json={"query_id": doc["request_id"], "labels": [int(y[i])]}
            )
            assert fed.status_code == 200, fed.text
        weights = fed.json()["results"][0]["weights"]
        assert weights["strong"] == 1.0 and weights["weak"] < 0.1, weights
        late = chosen[-50:]
        assert late.count("strong") >= 40, (late.count("strong"), late)
        again = client.post(
            "/v1/apps/sommelier/feedback", json={"query_id": doc["request_id"], "labels": [0]}
        )
        assert again.status_code == 404, again.text
        wrong = client.post("/v1/apps/sommelier/feedback", json={"query_id": "nope", "labels": "a"})
        assert wrong.status_code == 422, wrong.text
    text = running.metrics("gateway")
    counted = re.search(r'infaas_selection_feedback_rows_total\{app="sommelier",model="strong"\} (\S+)', text)
    assert counted is not None and float(counted.group(1)) > 0


def test_exp4_answers_at_the_deadline_without_the_straggler(tmp_path: Path) -> None:
    """Three classifiers on real executors, one of them made slow by the query itself (`wine_straggler`:
    its profile is fast, a first feature of 2,000 costs it about a second): Exp4 answers at the query's
    deadline with the two that arrived and names the third. A suite of its own whose executors run every
    batch on its instance's thread: a batch run on the event loop (the default for microsecond models)
    would hold up every model of that executor behind the straggler, so what is late would depend on
    where the planner placed the instances."""
    with own_suite(_settings(tmp_path / "var", executor_inline_ms=0.0)) as running:
        _straggler(running)


def _straggler(running: RunningSuite) -> None:
    created = running.admin.post("/v1/apps", json={"name": "tasting", "slo_policy": "best_effort"})
    assert created.status_code == 201, created.text
    x, y = wine_data()
    validation = io.BytesIO()
    np.savez(validation, x=x, y=y)
    models = {
        "t_strong": wine_classifier(STRONG),
        "t_weak": wine_classifier(WEAK),
        "t_slow": wine_straggler(WEAK),
    }
    with running.client(created.json()["api_key"]) as client:
        for name, onnx_bytes in models.items():
            metadata = orjson.dumps({"name": name, "app": "tasting", "task": "classification"}).decode()
            files = {"file": ("m.onnx", onnx_bytes), "validation": ("v.npz", validation.getvalue())}
            assert client.post("/v1/models", files=files, data={"metadata": metadata}).status_code == 202
        for name in models:
            assert running.wait_ready(name)["status"] == "ready"
        selection = {"policy": "exp4", "models": list(models)}
        assert client.patch("/v1/apps/tasting", json={"selection": selection}).status_code == 200

        def all_answer() -> bool:  # the selection applied, and every model's instance loaded
            doc = client.post("/v1/apps/tasting/infer", json={"inputs": x[:1].tolist()}).json()
            return doc.get("selection", {}).get("answered") == list(models)

        wait_for(all_answer, what="all three models answering", timeout_s=60)
        row = x[:1].copy()
        row[0, 0] = 3000.0  # two 3,000² products: seconds in fp32, past 250 ms in any variant
        answer = client.post("/v1/apps/tasting/infer", json={"inputs": row.tolist(), "latency_ms": 250})
        assert answer.status_code == 200, answer.text
        doc = answer.json()
        assert doc["selection"]["answered"] == ["t_strong", "t_weak"], (
            doc["selection"]["missing"],
            doc["reason"],
        )
        assert doc["selection"]["missing"] == [{"model": "t_slow", "reason": "no answer within the deadline"}]
        assert "missing: t_slow (no answer within the deadline)" in doc["reason"]
        assert doc["model"] == "t_strong,t_weak"
        assert doc["selection"]["confidence"][0] in (0.5, 1.0)  # agreement of the two that answered
