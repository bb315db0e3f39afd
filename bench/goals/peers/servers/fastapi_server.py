"""FastAPI + uvicorn with the model called inline in the route (no batching): the baseline most people
write first. `POST /predict/{model}` with `{"inputs": [[64 floats], …]}` → `{"outputs": [[10 floats], …]}`.

    PEERS_MODELS=var/peers/models PYTHONPATH=. var/peers/fastapi/venv/bin/python \
        bench/goals/peers/servers/fastapi_server.py PORT
"""

from __future__ import annotations

import sys

import numpy as np
import uvicorn
from fastapi import FastAPI, HTTPException
from pydantic import BaseModel

from bench.goals.peers.servers.common import MODELS, Model


class Request(BaseModel):
    inputs: list[list[float]]


app = FastAPI()
models = {name: Model(name) for name in MODELS}


@app.get("/health")
def health() -> dict[str, str]:
    return {"status": "ok"}


@app.post("/predict/{model}")
def predict(model: str, request: Request) -> dict[str, list[list[float]]]:
    # a sync route runs in uvicorn's thread pool, as FastAPI's docs advise for blocking work
    if model not in models:
        raise HTTPException(404, f"no model {model}")
    rows = np.asarray(request.inputs, dtype=np.float32)
    return {"outputs": models[model].run(rows).tolist()}


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False)
