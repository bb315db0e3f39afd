"""Worker providers: where the worker autoscaler's workers come from.

- `base.py`: the `WorkerProvider` interface;
- `local.py`: executor processes on this machine, each on cores of its own;
- `kubernetes.py`: pods of one executor Deployment per hardware kind.
"""

from services.planner.providers.base import WorkerProvider

__all__ = ["WorkerProvider"]
