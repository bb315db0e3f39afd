"""`PATCH /v1/apps/{app}` `selection` in the registry, on real Postgres: models that share a task and an
output space are accepted and travel to the gateway's view of the app; anything else is a 422 naming the
reason, and changes nothing."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
from fastapi.testclient import TestClient
from onnx import TensorProto, helper, numpy_helper

from tests.integration.registry.conftest import ADMIN, upload
from tests.selection_wine import STRONG, WEAK, wine_classifier, wine_data


def validation() -> bytes:
    x, y = wine_data()
    out = io.BytesIO()
    np.savez(out, x=x, y=y)
    return out.getvalue()


def four_class_model() -> bytes:
    """Takes the wine features like the others, answers four scores: another output space."""
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["features", "w"], ["logits"])],
        "four",
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, [None, 13])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [None, 4])],
        initializer=[numpy_helper.from_array(np.ones((13, 4), np.float32), "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return bytes(model.SerializeToString())


def patch(registry: TestClient, selection: dict[str, Any]) -> Any:
    return registry.patch("/v1/apps/cellar", json={"selection": selection}, headers=ADMIN)


def test_selection_option_is_checked_and_stored(registry: TestClient) -> None:
    assert registry.post("/v1/apps", json={"name": "cellar"}, headers=ADMIN).status_code == 201
    for name, model in (("strong", wine_classifier(STRONG)), ("weak", wine_classifier(WEAK))):
        files = upload(model, validation(), name=name, app="cellar")
        assert registry.post("/v1/models", headers=ADMIN, **files).status_code == 202
    files = upload(four_class_model(), validation(), name="four", app="cellar")
    assert registry.post("/v1/models", headers=ADMIN, **files).status_code == 202

    refused = [
        ({"policy": "exp3", "models": ["strong"]}, "at least two models"),
        ({"policy": "exp4", "models": ["strong", "nope"]}, "not models of app"),
        ({"policy": "exp4", "models": ["strong", "four"]}, "does not share"),
        ({"policy": "exp4", "models": ["strong", "weak"], "threshold": 0.5}, "default_output"),
        ({"policy": "exp4", "models": ["strong", "weak"], "eta": 0}, "greater than 0"),
        ({"policy": "bandit", "models": ["strong", "weak"]}, "policy"),
        ({"policy": "exp4", "models": ["strong", "weak"], "personalize": True}, "personalize applies"),
    ]
    for body, reason in refused:
        answer = patch(registry, body)
        assert answer.status_code == 422, (body, answer.text)
        assert reason in answer.text, (reason, answer.text)
    assert registry.get("/v1/apps/cellar", headers=ADMIN).json()["selection"]["policy"] == "single"

    answer = patch(registry, {"policy": "exp3", "models": ["strong", "weak"], "eta": 0.2})
    assert answer.status_code == 200, answer.text
    assert answer.json()["selection"]["models"] == ["strong", "weak"]
    internal = registry.get("/internal/apps/cellar").json()
    assert internal["selection"]["policy"] == "exp3" and internal["selection"]["eta"] == 0.2
    # a threshold with a default output; then clearing the default output under it is refused
    gated = {"policy": "exp4", "models": ["strong", "weak"], "threshold": 0.6}
    both = {"default_output": {"logits": [0, 0, 0]}, "selection": gated}
    assert registry.patch("/v1/apps/cellar", json=both, headers=ADMIN).status_code == 200
    cleared = registry.patch("/v1/apps/cellar", json={"default_output": None}, headers=ADMIN)
    assert cleared.status_code == 422 and "threshold" in cleared.text
    assert registry.patch("/v1/apps/cellar", json={"selection": None}, headers=ADMIN).status_code == 422
    off = patch(registry, {"policy": "single"})
    assert off.status_code == 200 and off.json()["selection"]["models"] == []
