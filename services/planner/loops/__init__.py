"""The planner's control loops: each tick observes Redis (and the registry), runs a pure policy from
`services/planner/policies/` and acts — through the executors, a worker provider or the registry — and
records what it decided and why (`services/planner/event_log.py`).

- `startup.py`: which loops run, from the settings (`start_loops`, called from the app's lifespan);
- `leader.py`: the Redis lease that lets one planner of several act;
- `observe.py`: the model autoscaler's view (offered load, SLOs, the cluster snapshot);
- `model_autoscaler.py`: the model autoscaler loop;
- `worker_autoscaler.py`: the worker autoscaler loop;
- `jobs.py`: the offline-jobs loop (throttle, chunk leases, Celery tasks).
"""
