"""An in-process dispatch for the selection layer's integration tests: each named-model query runs on its
model's ONNX Runtime session (the scheduler's own path is covered by its tests)."""

from __future__ import annotations

import asyncio

import onnxruntime as ort

from infaas.clients.envelope import Answer, Query
from tests.selection_wine import MIDDLE, STRONG, WEAK, wine_classifier

COLUMNS = {"strong": STRONG, "weak": WEAK, "middle": MIDDLE}


class OnnxDispatch:
    """Runs a named-model query on that model's ONNX Runtime session; models in `slow` answer late."""

    def __init__(self) -> None:
        self.sessions = {name: ort.InferenceSession(wine_classifier(cols)) for name, cols in COLUMNS.items()}
        self.slow: dict[str, float] = {}
        self.sent: list[str] = []

    async def __call__(self, query: Query) -> Answer:
        self.sent.append(query.target)
        if query.target in self.slow:
            await asyncio.sleep(self.slow[query.target])
        (logits,) = self.sessions[query.target].run(None, dict(query.tensors))
        return Answer(
            {"logits": logits}, query.target, f"{query.target}-onnx", "in-process", "cpu",
            0.0, 0.1, 0.1, None, False, False, "ran in-process", query.request_id,
        )  # fmt: skip
