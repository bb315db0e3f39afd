"""The planner service: control loops that keep the cluster fitted to its load.

Service plumbing:
- `app.py`: the factory (starts the loops and the failure watch for the app's lifetime);
- `api.py`: its internal routes; `metrics.py`: its Prometheus metrics;
- `event_log.py`: every decision with its reason, in Postgres;
- `signals.py`: the registry's counters that wake the idle loops (offline jobs, pipeline tuner).

Failure detection (FailLite):
- `failure_watch.py`: the failure watch (workers' pulses, its own echo, probes, declarations);
- `pulse_inbox.py`: its UDP socket, where every pulse is verified; `probes.py`: a silent worker's port
  probed (dead or paused);
- `failure_records.py`: each failure, recovery and false alarm recorded once as an event.

Pipelines (InferLine):
- `pipelines.py`: the pipeline planner's mechanism (gather, plan, store, apply);
- `retirement.py`: what a new plan leaves unused, drained once every gateway serves it.

`policies/` the pure policies (model autoscaling greedy and ILP, worker autoscaling, interference, warm
instances, the offline-jobs throttle, warm backups and progressive failover, pipeline planning and
tuning); `loops/` the loops that observe, run a policy and act; `providers/` where workers come from
(local processes, Kubernetes); `simulator/` the same policies run over a simulated cluster. Each
package's `__init__` maps its modules (`tests/unit/planner/test_room_map.py` keeps the maps
complete).
"""
