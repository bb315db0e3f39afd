"""Ray Serve: one application per model and mode, `POST /{model}/plain` and `POST /{model}/batched`
(`@serve.batch`: up to 32 rows, 2 ms batch_wait_timeout_s), body `{"inputs": [[64 floats]]}` →
`{"outputs": [[10 floats]]}`. A local Ray with one CPU, no dashboard, no usage reporting.

    PEERS_MODELS=… PYTHONPATH=. RAY_USAGE_STATS_ENABLED=0 \
        var/peers/ray/venv/bin/python bench/goals/peers/servers/ray_server.py PORT
"""

from __future__ import annotations

import sys
import time

import numpy as np
import ray
from ray import serve
from starlette.requests import Request

from bench.goals.peers.servers.common import BATCH_WAIT_S, MAX_BATCH, MODELS, Model


class Plain:
    def __init__(self, model: str) -> None:
        self.model = Model(model)

    async def __call__(self, request: Request) -> dict[str, list[list[float]]]:
        rows = np.asarray((await request.json())["inputs"], dtype=np.float32)
        return {"outputs": self.model.run(rows).tolist()}


class Batched:
    def __init__(self, model: str) -> None:
        self.model = Model(model)

    @serve.batch(max_batch_size=MAX_BATCH, batch_wait_timeout_s=BATCH_WAIT_S)
    async def infer(self, rows: list[np.ndarray]) -> list[np.ndarray]:
        out = self.model.run(np.concatenate(rows))
        sizes = np.cumsum([len(r) for r in rows])[:-1]
        return np.split(out, sizes)

    async def __call__(self, request: Request) -> dict[str, list[list[float]]]:
        rows = np.asarray((await request.json())["inputs"], dtype=np.float32)
        return {"outputs": (await self.infer(rows)).tolist()}


if __name__ == "__main__":
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    serve.start(http_options={"host": "127.0.0.1", "port": int(sys.argv[1])})
    plain = serve.deployment(ray_actor_options={"num_cpus": 0})(Plain)
    batched = serve.deployment(ray_actor_options={"num_cpus": 0}, max_ongoing_requests=256)(Batched)
    for name in MODELS:
        serve.run(plain.bind(name), name=f"{name}-plain", route_prefix=f"/{name}/plain")
        serve.run(batched.bind(name), name=f"{name}-batched", route_prefix=f"/{name}/batched")
    print("ready", flush=True)
    while True:
        time.sleep(3600)
