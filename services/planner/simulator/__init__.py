"""Discrete-event simulation of workers, instances, batching queues and the planner.

- `engine.py`: the simulation tick by tick, with the real model and worker autoscalers;
- `serving.py`: the serving half of a tick (selection, FIFO queues, latency, utilization);
- `batch_queue.py`: a centralized batched queue's event loop, compiled with numba;
- `pipelines.py`: InferLine's estimator (a pipeline's end-to-end latency over a trace).
"""

from services.planner.simulator.engine import SimConfig, SimModel, SimResult, simulate

__all__ = ["SimConfig", "SimModel", "SimResult", "simulate"]
