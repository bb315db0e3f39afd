"""BentoML: one service, two endpoints per model: `/{model}_plain` and `/{model}_batched` (BentoML's
adaptive batching: up to 32 rows; its batcher chooses the wait within `max_latency_ms`, set high so that
it never refuses a query for latency). Body `{"x": [[64 floats]]}` → `[[10 floats]]`.

    cd bench/goals/peers/servers && PEERS_MODELS=… BENTOML_HOME=… PYTHONPATH=../../../.. \
        ../../../../var/peers/bentoml/venv/bin/bentoml serve bentoml_service:Peers \
        --host 127.0.0.1 --port PORT
"""

from __future__ import annotations

import bentoml
import numpy as np

from bench.goals.peers.servers.common import MAX_BATCH, MODELS, Model

BATCHED = {"batchable": True, "batch_dim": 0, "max_batch_size": MAX_BATCH, "max_latency_ms": 10_000}


@bentoml.service(workers=1, traffic={"timeout": 30})
class Peers:
    def __init__(self) -> None:
        self.models = {name: Model(name) for name in MODELS}

    @bentoml.api
    def tiny_plain(self, x: np.ndarray) -> np.ndarray:
        return self.models["tiny"].run(x)

    @bentoml.api(**BATCHED)
    def tiny_batched(self, x: np.ndarray) -> np.ndarray:
        return self.models["tiny"].run(x)

    @bentoml.api
    def heavy_plain(self, x: np.ndarray) -> np.ndarray:
        return self.models["heavy"].run(x)

    @bentoml.api(**BATCHED)
    def heavy_batched(self, x: np.ndarray) -> np.ndarray:
        return self.models["heavy"].run(x)

    @bentoml.api
    def fixed_plain(self, x: np.ndarray) -> np.ndarray:
        return self.models["fixed"].run(x)

    @bentoml.api(**BATCHED)
    def fixed_batched(self, x: np.ndarray) -> np.ndarray:
        return self.models["fixed"].run(x)
