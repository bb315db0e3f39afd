"""MLServer: a custom runtime (there is no mlserver-onnx package) that runs the model with ONNX Runtime.
MLServer's own adaptive batching (`max_batch_size` / `max_batch_time` in each model's settings) merges
queued V2 requests along the first axis and splits the answer; `systems.mlserver_repo` writes the model
repository (settings.json, one folder per model and mode: `tiny` unbatched, `tiny-batched` …).

    POST /v2/models/{model}/infer  {"inputs": [{"name": "x", "shape": [1, 64], "datatype": "FP32",
                                                "data": [...]}]}
"""

from __future__ import annotations

from mlserver import MLModel
from mlserver.codecs import NumpyCodec
from mlserver.types import InferenceRequest, InferenceResponse

from bench.goals.peers.servers.common import Model


class OnnxRuntime(MLModel):
    async def load(self) -> bool:
        extra = self.settings.parameters.extra if self.settings.parameters else None
        self._model = Model(str((extra or {})["model"]))
        return True

    async def predict(self, payload: InferenceRequest) -> InferenceResponse:
        rows = NumpyCodec.decode_input(payload.inputs[0])
        logits = self._model.run(rows)
        return InferenceResponse(model_name=self.name, outputs=[NumpyCodec.encode_output("logits", logits)])
