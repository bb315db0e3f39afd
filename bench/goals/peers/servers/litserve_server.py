"""LitServe: one LitAPI per model and batching mode, `POST /{model}/plain` (max_batch_size 1) and
`POST /{model}/batched` (its dynamic batching: up to 32 rows, 2 ms batch_timeout), body
`{"inputs": [[64 floats]]}` → `{"outputs": [[10 floats]]}`.

    PEERS_MODELS=var/peers/models PYTHONPATH=bench/goals/peers/servers:. \
        var/peers/litserve/venv/bin/python bench/goals/peers/servers/litserve_server.py PORT
"""

from __future__ import annotations

import sys

import litserve as ls
import numpy as np

from bench.goals.peers.servers.common import BATCH_WAIT_S, MAX_BATCH, MODELS, Model


class OnnxAPI(ls.LitAPI):
    def __init__(self, model: str, batched: bool) -> None:
        super().__init__(
            max_batch_size=MAX_BATCH if batched else 1,
            batch_timeout=BATCH_WAIT_S if batched else 0.0,
            api_path=f"/{model}/{'batched' if batched else 'plain'}",
        )
        self.model_name = model
        self.batched = batched

    def setup(self, device: str) -> None:  # noqa: ARG002 - CPU only
        self.model = Model(self.model_name)

    def decode_request(self, request: dict[str, list[list[float]]]) -> np.ndarray:
        return np.asarray(request["inputs"], dtype=np.float32)

    def batch(self, inputs: list[np.ndarray]) -> np.ndarray:
        return np.concatenate(inputs)

    def predict(self, x: np.ndarray) -> np.ndarray:
        return self.model.run(x)

    def unbatch(self, output: np.ndarray) -> list[np.ndarray]:
        return [row[None, :] for row in output]

    def encode_response(self, output: np.ndarray) -> dict[str, list[list[float]]]:
        return {"outputs": output.tolist()}


if __name__ == "__main__":
    apis = [OnnxAPI(m, b) for m in MODELS for b in (False, True)]
    server = ls.LitServer(apis, accelerator="cpu", devices=1, workers_per_device=1, timeout=30)
    server.run(
        host="127.0.0.1",
        port=int(sys.argv[1]),
        num_api_servers=1,
        generate_client_file=False,
        log_level="warning",
    )
