"""Discrete-event simulation of workers, instances, batching queues and the planner (see engine.py)."""

from services.planner.simulator.engine import SimConfig, SimModel, SimResult, simulate

__all__ = ["SimConfig", "SimModel", "SimResult", "simulate"]
