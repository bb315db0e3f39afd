"""Worker providers: local executor processes on this machine, or Kubernetes Deployments."""

from services.planner.providers.base import WorkerProvider

__all__ = ["WorkerProvider"]
